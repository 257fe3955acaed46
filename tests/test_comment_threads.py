"""Comment threads and forum threads on a single page, recognised by their structure:
a blog post keeps its article and drops its readers' comments, a forum topic keeps its
opening post and drops the replies, and ``include_comments=True`` keeps them all."""

import pytest
from comment_pages import BLOGS, FORUMS, unnamed, wordpress

from sst_cleaner import SiteCleaner


def _share(parts: list[str], text: str) -> float:
    return sum(p in text for p in parts) / len(parts)


MARKUPS = sorted({**BLOGS, **FORUMS}.items())


@pytest.mark.parametrize("n_comments", [3, 30])
@pytest.mark.parametrize("name, make", MARKUPS)
def test_comments_go_by_default_and_the_post_stays(name, make, n_comments):
    # a long thread outweighs the post, so its container cannot be trusted by its
    # names (it holds most of the page's text): the records' structure tells
    html, post, comments = make(11, n_comments)
    text = SiteCleaner().clean(html).text
    assert _share(post, text) == 1.0, (name, text)
    assert _share(comments, text) == 0.0, (name, text)


@pytest.mark.parametrize("name, make", MARKUPS)
def test_include_comments_keeps_the_thread(name, make):
    html, post, comments = make(12, 8)
    text = SiteCleaner(include_comments=True).clean(html).text
    assert _share(post, text) == 1.0, (name, text)
    assert _share(comments, text) == 1.0, (name, text)


@pytest.mark.parametrize("name, make", sorted(FORUMS.items()))
def test_a_forum_topic_keeps_its_opening_post_ahead_of_the_replies(name, make):
    html, post, replies = make(13, 6)
    result = SiteCleaner().clean(html)
    assert _share(post, result.text) == 1.0, (name, result.text)
    assert _share(replies, result.text) == 0.0
    # the replies are blocks the clean labels noise, not text it lost
    noise = " ".join(b.text for b in result.blocks if b.label != "informative")
    assert _share(replies, noise) == 1.0


def test_an_opening_post_named_like_the_replies_stays():
    # bbPress names every post of a topic, the first too, as a reply: by its name alone
    # the opening post went with the replies and the page came out without its matter
    html, post, replies = FORUMS["bbpress"](16, 4)
    text = SiteCleaner().clean(html).text
    assert _share(post, text) == 1.0, text
    assert _share(replies, text) == 0.0, text


def test_the_thread_s_heading_and_answer_form_go_with_it():
    html, post, comments = unnamed(14, 8)
    text = SiteCleaner().clean(html).text
    assert "8 Comments" not in text and "Leave a comment" not in text, text
    html, post, comments = wordpress(14, 8)
    text = SiteCleaner().clean(html).text
    for furniture in ("thoughts on", "Leave a Reply", "will not be published", "says:"):
        assert furniture not in text, (furniture, text)


def test_records_with_dates_but_no_way_to_answer_are_not_a_thread():
    # a blog's front page: posts with a date line and a "Leave a reply" link each are
    # the page's matter, not comments
    html, post, _ = wordpress(15, 0)
    articles = "".join(
        f'<article class="post"><h2><a href="/p/{k}">Post {k}</a></h2><div class="meta">March {k + 1}, 2020 at 10:1{k} am</div>'
        f'<div class="entry"><p>{p}</p></div><a href="/p/{k}#respond">Leave a reply</a></article>'
        for k, p in enumerate(post)
    )
    start = html.index('<div class="content-area">')
    end = html.index('<div class="side">')
    page = html[:start] + f'<div class="content-area">{articles}</div>' + html[end:]
    text = SiteCleaner().clean(page).text
    assert _share(post, text) == 1.0, text
    assert _share(post, SiteCleaner(include_comments=True).clean(page).text) == 1.0


def test_a_site_model_drops_the_comments_of_its_pages_too():
    pages = [disqus for disqus in (BLOGS["disqus"](i, 5)[0] for i in range(5))]
    html, post, comments = BLOGS["disqus"](40, 9)
    cleaner = SiteCleaner().fit(pages)
    text = cleaner.clean(html).text
    assert _share(post, text) == 1.0, text
    assert _share(comments, text) == 0.0, text
    keeping = SiteCleaner(include_comments=True).fit(pages)
    assert _share(comments, keeping.clean(html).text) == 1.0
