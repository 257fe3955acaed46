"""Five small pages of one generated news site (nav, article, footer), shared by the
tests of model files, loading and learning."""

STORY_PAGES = [
    "<html><head><title>Story %d</title></head><body><ul class='nav'><li><a href='/'>Home</a></li>"
    "<li><a href='/n'>News</a></li></ul><div class='art'><h1>Headline number %d</h1>"
    "<p>The council met on day %d to discuss the river bridge and the new library.</p>"
    "<p>Residents said the plan number %d was good for the city.</p></div>"
    "<div id='foot'>Copyright Example Daily</div></body></html>" % (i, i, i, i)
    for i in range(5)
]
