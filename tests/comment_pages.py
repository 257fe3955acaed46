"""Generated single pages with a reader's comment thread or a forum thread, in the
markups such pages are made of on the web: WordPress's comment list, a Disqus-like
thread, phpBB-, vBulletin- and Discourse-like forum posts, and comments whose class
names say nothing (only the repeated author and time headers and the reply links tell).

Each builder returns ``(html, post, comments)``: the page, the paragraphs of the article
(for a forum thread: of its opening post) and the paragraphs of the comments (the
replies). Article and comment sentences are drawn from different words, so a test can
tell which of them a clean kept.
"""

from __future__ import annotations

import random

_SUBJECTS = (
    "The council",
    "Our reporter",
    "The new library",
    "A local farmer",
    "The river authority",
    "The school board",
    "A young engineer",
    "The museum",
)
_VERBS = ("announced", "described", "questioned", "celebrated", "postponed", "reviewed", "explained", "defended")
_OBJECTS = (
    "a plan to repair the old bridge",
    "the budget for next winter",
    "the results of the water survey",
    "an exhibition of early maps",
    "the opening hours of the market",
    "a proposal for safer cycling routes",
)
_TAILS = (
    "after a long meeting on Tuesday, as expected",
    "despite strong objections from residents",
    "with support from volunteers and donors",
    "before the end of the month, officials said",
)

# what readers write: first person, opinions, questions (words the article never uses)
_OPENERS = ("Honestly", "Great write-up", "I disagree", "Thanks for this", "Interesting", "Not sure about this")
_TAKES = (
    "my grandmother grew up near there and she always complained about the potholes",
    "I tried that recipe yesterday and my kids loved it, though I halved the sugar",
    "does anybody know if the parking garage stays open during weekends",
    "this happened to my cousin too, he waited three weeks for a refund",
    "I would love to see a follow-up piece with numbers from other towns",
    "the comments here are getting heated, let us keep it civil folks",
    "my laptop fan makes the same noise whenever I run the compiler",
    "we switched providers last spring and never looked back, best decision ever",
)
_MONTHS = ("January", "March", "May", "July", "September", "November")
NAMES = ("jenny_k", "Marcus T.", "oldtimer42", "Priya", "bob", "Lena W.", "kaz", "Dave from Leeds")


def article_paragraphs(rng: random.Random, n: int = 5) -> list[str]:
    return [
        " ".join(
            f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} {rng.choice(_TAILS)}."
            for _ in range(3)
        )
        for _ in range(n)
    ]


def comment_paragraphs(rng: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        a, b = rng.sample(_TAKES, 2)
        out.append(f"{rng.choice(_OPENERS)}, {a}. Also, {b}!")
    return out


def _date(rng: random.Random) -> str:
    return f"{rng.choice(_MONTHS)} {rng.randint(1, 28)}, 20{rng.randint(10, 23)} at {rng.randint(1, 12)}:{rng.randint(10, 59)} pm"


def _frame(title: str, main: str) -> str:
    return f"""<html><head><title>{title}</title></head><body>
<div class="site-header"><a href="/">Home</a> <a href="/news">News</a> <a href="/about">About</a>
<a href="/contact">Contact</a></div>
<div class="wrap">{main}
<div class="side"><h3>Archives</h3><ul><li><a href="/2020">2020</a></li><li><a href="/2021">2021</a></li></ul></div>
</div>
<div class="site-footer">Copyright Example Town Blog. All rights reserved.</div>
</body></html>"""


def wordpress(seed: int, n_comments: int = 6, nested: bool = True) -> tuple[str, list[str], list[str]]:
    """A blog post with WordPress's comment list (``ol.commentlist li.comment``, replies
    in ``ol.children``), the comment-count heading and the reply form."""
    rng = random.Random(seed)
    post = article_paragraphs(rng)
    comments = comment_paragraphs(rng, n_comments)

    def one(k: int, text: str, inner: str = "") -> str:
        cid = 100 + k
        return (
            f'<li class="comment {"even" if k % 2 else "odd"} thread-{"even" if k % 2 else "odd"} depth-1" id="comment-{cid}">'
            f'<article id="div-comment-{cid}" class="comment-body"><footer class="comment-meta">'
            f'<div class="comment-author vcard"><img class="avatar" src="/a.png" alt=""> '
            f'<b class="fn">{NAMES[k % len(NAMES)]}</b> <span class="says">says:</span></div>'
            f'<div class="comment-metadata"><a href="/post#comment-{cid}"><time datetime="2020-01-01">{_date(rng)}</time></a></div>'
            f'</footer><div class="comment-content"><p>{text}</p></div>'
            f'<div class="reply"><a class="comment-reply-link" href="/post?replytocom={cid}#respond">Reply</a></div>'
            f"</article>{inner}</li>"
        )

    items = []
    k = 0
    while k < len(comments):
        if nested and k + 1 < len(comments) and k % 3 == 0:
            child = one(k + 1, comments[k + 1])
            items.append(one(k, comments[k], f'<ol class="children">{child}</ol>'))
            k += 2
        else:
            items.append(one(k, comments[k]))
            k += 1
    main = f"""<div class="content-area"><article class="post type-post"><header class="entry-header">
<h1 class="entry-title">Town news {seed}</h1><div class="entry-meta">Posted on {_date(rng)} by admin</div></header>
<div class="entry-content">{"".join(f"<p>{p}</p>" for p in post)}</div></article>
<div id="comments" class="comments-area"><h2 class="comments-title">{len(comments)} thoughts on &ldquo;Town news {seed}&rdquo;</h2>
<ol class="commentlist">{"".join(items)}</ol>
<div id="respond" class="comment-respond"><h3 id="reply-title" class="comment-reply-title">Leave a Reply</h3>
<form action="/wp-comments-post.php" method="post" id="commentform" class="comment-form">
<p class="comment-notes">Your email address will not be published. Required fields are marked *</p>
<p><label for="comment">Comment</label><textarea id="comment" name="comment"></textarea></p>
<p><input type="submit" value="Post Comment"></p></form></div></div></div>"""
    return _frame(f"Town news {seed}", main), post, comments


def disqus_like(seed: int, n_comments: int = 6) -> tuple[str, list[str], list[str]]:
    """A post with a Disqus-like thread: ``li.post`` records (a name that says content),
    author, relative time, vote and reply links, replies nested in ``ul.children``."""
    rng = random.Random(seed)
    post = article_paragraphs(rng)
    comments = comment_paragraphs(rng, n_comments)

    def one(k: int, text: str, inner: str = "") -> str:
        return (
            f'<li class="post" id="post-{4000 + k}"><div class="post-content"><div class="avatar"><img src="/u.png" alt=""></div>'
            f'<div class="post-body"><header><span class="author"><a href="/by/{k}">{NAMES[k % len(NAMES)]}</a></span> '
            f'<span class="post-meta"><a class="time-ago" href="#post-{4000 + k}">{rng.randint(2, 11)} hours ago</a></span></header>'
            f'<div class="post-message"><p>{text}</p></div>'
            f'<footer><a class="vote-up" href="#">Upvote</a> <a class="reply" href="#">Reply</a> <a href="#">Share</a></footer>'
            f"</div></div>{inner}</li>"
        )

    items = []
    for k in range(0, len(comments), 2):
        inner = f'<ul class="children">{one(k + 1, comments[k + 1])}</ul>' if k + 1 < len(comments) else ""
        items.append(one(k, comments[k], inner))
    main = f"""<div class="story"><h1>Town news {seed}</h1><p class="byline">By Staff Writer</p>
{"".join(f"<p>{p}</p>" for p in post)}</div>
<div id="thread"><div class="thread-head"><span>{len(comments)} Comments</span> <a href="#">Sort by Best</a></div>
<ul id="post-list" class="post-list">{"".join(items)}</ul></div>"""
    return _frame(f"Town news {seed}", main), post, comments


def phpbb_like(seed: int, n_replies: int = 5) -> tuple[str, list[str], list[str]]:
    """A forum topic as phpBB writes it: ``div.post`` records, a profile box with post
    count and join date, "Re:" titles, a Quote button and "by NAME » DATE" lines. The
    first post is the question; the rest are replies."""
    rng = random.Random(seed)
    post = article_paragraphs(rng, 3)
    comments = comment_paragraphs(rng, n_replies)

    def one(k: int, paras: list[str]) -> str:
        pid = 9000 + k
        name = NAMES[k % len(NAMES)]
        title = f"Town bridge question {seed}" if k == 0 else f"Re: Town bridge question {seed}"
        return (
            f'<div id="p{pid}" class="post has-profile {"bg1" if k % 2 else "bg2"}"><div class="inner">'
            f'<dl class="postprofile" id="profile{pid}"><dt><a href="/memberlist.php?u={k}" class="username">{name}</a></dt>'
            f'<dd class="profile-posts"><strong>Posts:</strong> {rng.randint(3, 900)}</dd>'
            f'<dd class="profile-joined"><strong>Joined:</strong> Mon Jan 0{rng.randint(1, 9)}, 2018 10:00 am</dd></dl>'
            f'<div class="postbody"><div id="post_content{pid}"><h3><a href="#p{pid}">{title}</a></h3>'
            f'<ul class="post-buttons"><li><a href="/posting.php?mode=quote&amp;p={pid}" title="Quote" class="button">'
            f"<span>Quote</span></a></li></ul>"
            f'<p class="author"><a href="#p{pid}">Post</a> by <strong><a href="/u/{k}" class="username">{name}</a></strong>'
            f" &raquo; Tue Mar {rng.randint(10, 28)}, 2019 {rng.randint(1, 12)}:{rng.randint(10, 59)} pm</p>"
            f'<div class="content">{"<br><br>".join(paras)}</div></div></div>'
            f'<div class="back2top"><a href="#top" class="top" title="Top">Top</a></div></div></div><hr class="divider">'
        )

    posts = one(0, post) + "".join(one(k + 1, [c]) for k, c in enumerate(comments))
    main = f"""<div id="page-body"><h2 class="topic-title"><a href="/viewtopic.php?t={seed}">Town bridge question {seed}</a></h2>
<div class="action-bar"><a href="/posting.php?mode=reply" class="button">Post Reply</a> {n_replies + 1} posts &bull; Page 1 of 1</div>
{posts}
<div class="action-bar"><a href="/posting.php?mode=reply" class="button">Post Reply</a></div></div>"""
    return _frame(f"Town bridge question {seed} - Example Forum", main), post, comments


def vbulletin_like(seed: int, n_replies: int = 5) -> tuple[str, list[str], list[str]]:
    """A vBulletin-like thread: ``ol#posts li.postcontainer`` with a date header, a post
    counter (#1, #2...), a user box and a "Reply With Quote" link."""
    rng = random.Random(seed)
    post = article_paragraphs(rng, 3)
    comments = comment_paragraphs(rng, n_replies)

    def one(k: int, paras: list[str]) -> str:
        pid = 7000 + k
        return (
            f'<li class="postbitlegacy postbitim postcontainer old" id="post_{pid}"><div class="posthead">'
            f'<span class="postdate old"><span class="date">0{rng.randint(1, 9)}-1{rng.randint(0, 9)}-2012, '
            f'<span class="time">{rng.randint(1, 12)}:{rng.randint(10, 59)} AM</span></span></span>'
            f'<span class="nodecontrols"><a name="post{pid}" href="/showthread.php?p={pid}#post{pid}" class="postcounter">#{k + 1}</a></span></div>'
            f'<div class="postdetails"><div class="userinfo"><a class="username" href="/member.php?u={k}">{NAMES[k % len(NAMES)]}</a>'
            f'<span class="usertitle">Member</span><dl class="userinfo_extra"><dt>Join Date</dt><dd>Feb 2010</dd>'
            f"<dt>Posts</dt><dd>{rng.randint(3, 900)}</dd></dl></div>"
            f'<div class="postbody"><div class="postrow"><div class="content"><div id="post_message_{pid}">'
            f'<blockquote class="postcontent restore">{"<br><br>".join(paras)}</blockquote></div></div></div></div></div>'
            f'<div class="postfoot"><span class="textcontrols"><a href="/newreply.php?p={pid}" class="quote">Reply With Quote</a></span></div></li>'
        )

    posts = one(0, post) + "".join(one(k + 1, [c]) for k, c in enumerate(comments))
    main = f"""<div id="postlist" class="postlist"><h1>Town bridge question {seed}</h1><ol id="posts" class="posts">{posts}</ol></div>"""
    return _frame(f"Town bridge question {seed}", main), post, comments


def discourse_like(seed: int, n_replies: int = 5) -> tuple[str, list[str], list[str]]:
    """A Discourse topic as its crawler view serves it: ``div.crawler-post`` records with
    the author, a ``<time>`` and the post's position, and no reply links at all."""
    rng = random.Random(seed)
    post = article_paragraphs(rng, 3)
    comments = comment_paragraphs(rng, n_replies)

    def one(k: int, paras: list[str]) -> str:
        return (
            f'<div id="post_{k + 1}" class="topic-body crawler-post"><div class="crawler-post-meta">'
            f'<span class="creator"><a href="/u/{k}"><span>{NAMES[k % len(NAMES)]}</span></a></span>\n'
            f'<span class="crawler-post-infos"><time datetime="2020-01-03T10:00:00Z" class="post-time">'
            f"{rng.choice(_MONTHS)} {rng.randint(1, 28)}, 2020, {rng.randint(1, 12)}:{rng.randint(10, 59)}am</time>\n"
            f"<span>#{k + 1}</span></span></div>"
            f'<div class="post">{"".join(f"<p>{p}</p>" for p in paras)}</div>'
            f'<div class="crawler-post-footer"><span>{rng.randint(1, 9)} Likes</span></div></div>'
        )

    posts = one(0, post) + "".join(one(k + 1, [c]) for k, c in enumerate(comments))
    main = f"""<div id="main-outlet"><h1><a href="/t/{seed}">Town bridge question {seed}</a></h1>
<div class="topic-category"><a href="/c/town">Town</a></div>{posts}</div>"""
    return _frame(f"Town bridge question {seed}", main), post, comments


def bbpress_like(seed: int, n_replies: int = 5) -> tuple[str, list[str], list[str]]:
    """A bbPress-like topic, where every post, the opening one too, is named as a reply
    (``div.bbp-reply-content``), with a date header and a permalink post number."""
    rng = random.Random(seed)
    post = article_paragraphs(rng, 3)
    comments = comment_paragraphs(rng, n_replies)

    def one(k: int, paras: list[str]) -> str:
        return (
            f'<div id="post-{500 + k}" class="bbp-reply-header"><span class="bbp-reply-post-date">{_date(rng)}</span>\n'
            f'<a href="/t/{seed}#post-{500 + k}" class="bbp-reply-permalink">#{500 + k}</a></div>'
            f'<div class="bbp-reply-row"><div class="bbp-reply-author"><a href="/u/{k}">{NAMES[k % len(NAMES)]}</a></div>'
            f'<div class="bbp-reply-content">{"".join(f"<p>{p}</p>" for p in paras)}</div></div>'
        )

    posts = "".join(
        f'<li class="bbp-body-item">{one(k, paras)}</li>' for k, paras in enumerate([post] + [[c] for c in comments])
    )
    main = f"""<div id="bbpress-forums"><h1>Town bridge question {seed}</h1>
<ul class="bbp-replies">{posts}</ul></div>"""
    return _frame(f"Town bridge question {seed}", main), post, comments


def unnamed(seed: int, n_comments: int = 6) -> tuple[str, list[str], list[str]]:
    """A post whose comments' class names say nothing (generated, short ones): only the
    count heading, the repeated name and date lines and the reply links tell."""
    rng = random.Random(seed)
    post = article_paragraphs(rng)
    comments = comment_paragraphs(rng, n_comments)
    items = "".join(
        f'<div class="x7q"><div class="k2"><b>{NAMES[k % len(NAMES)]}</b> <span class="z9">{_date(rng)}</span></div>'
        f'<p class="m4">{c}</p><a class="r1" href="#f">Reply</a></div>'
        for k, c in enumerate(comments)
    )
    main = f"""<div class="a1"><h1>Town news {seed}</h1>{"".join(f"<p>{p}</p>" for p in post)}</div>
<div class="b3"><h3>{len(comments)} Comments</h3>{items}
<h3>Leave a comment</h3><form id="f" action="/c" method="post"><textarea name="t"></textarea>
<input type="submit" value="Send"></form></div>"""
    return _frame(f"Town news {seed}", main), post, comments


#: blog posts with readers' comments (the post is the page's matter)
BLOGS = {"wordpress": wordpress, "disqus": disqus_like, "unnamed": unnamed}
#: forum threads (the opening post is the page's matter, the replies are comments)
FORUMS = {"phpbb": phpbb_like, "vbulletin": vbulletin_like, "discourse": discourse_like, "bbpress": bbpress_like}
