"""Site statistics: entropies and recurrence that can be checked on paper."""

import math

from sst_cleaner.engine._dom import parse_html
from sst_cleaner.engine.methods.sitestats._names import style_label
from sst_cleaner.engine.methods.sitestats.site_stats import SiteStats, analyse_page, sentence_hash


def page(body: str):
    return analyse_page(parse_html(f"<html><body>{body}</body></html>"))


def test_style_label_normalises_case_order_and_digits():
    a = parse_html('<body><div class="Post-123 entry" id="x"></div></body>').root[0]
    b = parse_html('<body><div class="entry post-9" id="X"></div></body>').root[0]
    assert style_label(a) == style_label(b) == "div|class=entry post-#|id=x"


def test_sentence_hash_ignores_case_punctuation_and_numbers():
    assert sentence_hash("Copyright 2012, ACME Inc.") == sentence_hash("copyright 2013 acme inc")
    assert sentence_hash("Copyright ACME") != sentence_hash("Copyright ACME Inc")


def test_feature_entropy_matches_hand_computation():
    # node div.body on 3 pages; feature "appl" (apple) occurs 2, 1, 1 times
    pages = [
        page('<div class="body"><p>Apple apple pie.</p></div>'),
        page('<div class="body"><p>Apple tart.</p></div>'),
        page('<div class="body"><p>Apple cake.</p></div>'),
    ]
    stats = SiteStats()
    for pa in pages:
        stats.add(pa)
    other = page('<div class="body"><p>Unrelated words.</p></div>')  # not in the fit set
    view = stats.page_view(other)
    key = pages[0].blocks[0].key
    w = [2 / 4, 1 / 4, 1 / 4]
    expected = -sum(x * math.log(x, 3) for x in w)
    assert math.isclose(view.feature_entropy(key, "appl"), expected, rel_tol=1e-9)
    # "pie" occurs on one page only: entropy 0
    assert view.feature_entropy(key, "pie") == 0.0


def test_own_page_is_taken_out_of_the_evidence():
    pages = [
        page(f'<div class="nav"><p>Home News Sport.</p></div><div class="body"><p>Story {w}.</p></div>')
        for w in ("alpha", "beta", "gamma")
    ]
    stats = SiteStats()
    for pa in pages:
        stats.add(pa)
    view = stats.page_view(pages[0])
    assert view.own == 1 and view.n_other == 2
    nav_sent = pages[0].blocks[0].sentences[0]
    body_sent = pages[0].blocks[1].sentences[0]
    assert view.sentence_df(nav_sent.hash) == 2  # on both other pages
    assert view.sentence_df(body_sent.hash) == 0  # only on itself
    # the nav sentence has the same words on the two other pages: entropy log_2(2) = 1
    assert math.isclose(view.sentence_entropy(pages[0].blocks[0].key, nav_sent), 1.0)
    # "story" is on both other pages (H = 1), "alpha" only on this one (H = 0 once the
    # page's own counts are removed): E(S) = (1 + 0) / 2
    assert math.isclose(view.sentence_entropy(pages[0].blocks[1].key, body_sent), 0.5)


def test_node_template_share():
    pages = [
        page(f'<ul class="menu"><li>Home</li><li>About</li><li>{w} offer</li></ul>')
        for w in ("red", "green", "blue", "black")
    ]
    stats = SiteStats()
    for pa in pages:
        stats.add(pa)
    key = pages[0].blocks[0].key
    # per page: "Home" (4 chars) and "About" (5) recur, "<colour> offer" does not
    tot = sum(4 + 5 + len(f"{w} offer") for w in ("red", "green", "blue", "black"))
    assert math.isclose(stats.node_template_share(key, 2), (4 * 9) / tot)


def test_round_trip_keeps_evidence():
    pages = [page(f"<p>Same footer text.</p><p>Own text {w}.</p>") for w in ("one", "two")]
    stats = SiteStats()
    for pa in pages:
        stats.add(pa)
    again = SiteStats.from_dict(stats.to_dict())
    assert again.n_pages == 2
    # the saved form keeps in full only what recurs; a one-page sentence is known as seen
    assert again.sent_df == {h: c for h, c in stats.sent_df.items() if c > 1} != stats.sent_df
    new = page("<p>Same footer text.</p><p>Own text one.</p><p>Never seen.</p>")
    for a, b in ((stats.page_view(pa), again.page_view(pa)) for pa in [*pages, new]):
        assert a.own == b.own and a.n_other == b.n_other
        for blk in new.blocks + pages[0].blocks:
            assert a.node_df(blk.key) == b.node_df(blk.key)
            for s in blk.text_info.sentences:
                assert a.sentence_df(s.hash) == b.sentence_df(s.hash)
                # Q is saved to 6 decimals
                assert math.isclose(a.sentence_entropy(blk.key, s), b.sentence_entropy(blk.key, s), rel_tol=1e-6)
    for key in stats.node_df:
        for min_df in (1, 2, 3):
            assert again.node_template_share(key, min_df) == stats.node_template_share(key, min_df)
    assert again.to_dict() == stats.to_dict()


def test_feature_sums_are_the_papers_s_and_q():
    # one node on 2 pages: "appl" occurs 3 times then once, "pie" once then not at all
    pages = [
        page('<div class="body"><p>Apple apple pie. Apple again.</p></div>'),
        page('<div class="body"><p>Apple tart.</p></div>'),
    ]
    stats = SiteStats()
    for pa in pages:
        stats.add(pa)
    key = pages[0].blocks[0].key
    assert stats.node_S[key]["appl"] == 4 and stats.node_S[key]["pie"] == 1
    assert math.isclose(stats.node_Q[key]["appl"], 3 * math.log(3))  # 1 ln 1 = 0 adds nothing
    assert "pie" not in stats.node_Q[key] and "tart" not in stats.node_Q[key]


def test_block_context_and_hints_come_from_its_own_ancestors():
    # the two outer divs have one style label (class values are cut at 80 characters)
    # but say different things: "comment" marks only the first one's paragraph
    long = "a" * 90
    pa = page(
        f'<div class="{long} comment"><ul><li>First reader comment here.</li></ul></div>'
        f'<div class="{long} other"><p>The article itself goes on.</p></div>'
        "<nav><p>Home and more links.</p></nav>"
    )
    first, second, third = pa.blocks
    assert style_label(first.block.element.getparent().getparent()) == style_label(second.block.element.getparent())
    assert first.hints & 1 and not second.hints & 1  # HINT_COMMENT
    assert first.ancestors == ("ul", "li") and second.ancestors == () and third.ancestors == ("nav",)
    # the style path (the SST node) is the same whatever the hints: p under that div
    same = page(f'<div class="{long} comment"><p>The article itself goes on.</p></div>')
    assert same.blocks[0].key == second.key


def _hint_bits(attrs: str) -> int:
    return page(f"<div {attrs}><p>Some words in a paragraph here.</p></div>").blocks[0].near_hints


def test_class_and_id_hints_match_at_word_starts_only():
    # a comment section, however its designer spelt it
    for attrs in (
        'class="comments"',
        'id="comment-list"',
        'class="commentList"',
        'class="post_replies"',
        'id="disqus_thread"',
    ):
        assert _hint_bits(attrs) & 1, attrs  # HINT_COMMENT
    # words that merely contain a hint word
    assert not _hint_bits('class="correspond"') & 1
    assert not _hint_bits('id="getlogin"') & 2  # HINT_BOILER ("login")
    assert _hint_bits('class="login-box"') & 2
    # a documentation theme's previous / next links, and its content wrapper beside them
    assert _hint_bits('class="docs-navigation-links" id="docs-bottom-navigation"') & 2
    assert not _hint_bits('class="wy-nav-content"') & 2
    # an id in capitals is an anchor made from a title (DocBook), not a container's name
    assert _hint_bits('id="SQL-COMMENT"') == 0
    assert _hint_bits('class="refentry" id="SQL-COMMENT"') == 0


def test_near_hints_leave_out_body_and_far_ancestors():
    # WordPress marks BODY "comments-open" on every article page
    pa = analyse_page(
        parse_html(
            '<html><body class="single comments-open"><div><div><div><div class="x">'
            "<p>Article text of the page.</p></div></div></div></div></body></html>"
        )
    )
    (blk,) = pa.blocks
    assert blk.hints & 1 and not blk.near_hints & 1
    deep = page('<div class="sidebar"><div><div><div><p>Deep paragraph text here.</p></div></div></div></div>')
    assert deep.blocks[0].hints & 2 and not deep.blocks[0].near_hints & 2


def test_name_tokens_split_ascii_and_other_names_alike():
    from sst_cleaner.engine.methods.sitestats._names import name_tokens

    assert name_tokens("commentList ABCdef-fooBAR_x9y") == ["comment", "list", "abcdef", "foo", "bar", "x", "y"]
    # the character loop for other names cuts where the ASCII pattern does
    assert name_tokens("commentList ABCdef-fooBAR_x9yé") == ["comment", "list", "abcdef", "foo", "bar", "x", "yé"]
    assert _hint_bits('class="Ünï commentBox"') & 1 and not _hint_bits('class="Ünïcomment"') & 1


def test_ascii_features_and_hash_match_the_general_path():
    from sst_cleaner.engine._text import feature_tuple, features_from_words, words
    from sst_cleaner.engine.methods.sitestats._analysis import _HASH_TOKEN, _digest, _words_hash

    ws = words("The 3 sites' copyright notices, 2019 and x_1 " + "long" * 40)
    assert feature_tuple(ws) == tuple(features_from_words(ws))
    cjk = words("Tokyo 東京都 is big, déjà vu")
    assert feature_tuple(cjk) == tuple(features_from_words(cjk)) == ("tokyo", "東京", "京都", "big", "déjà", "vu")
    for tokens in (ws, ["no", "number", "here"], ["²", "a"]):
        assert _words_hash(tokens) == _digest(" ".join(_HASH_TOKEN[t] for t in tokens))


def test_features_made_on_first_use_are_those_of_the_sentence_words():
    from sst_cleaner.engine._text import feature_tuple, words
    from sst_cleaner.engine.methods.sitestats._analysis import _block_text

    text = "Tokyo 東京都 is big. The 3 sites' copyright notices, 2019! Déjà vu x_1 again."
    bt = _block_text(text)
    assert len(bt.sentences) == 3
    # the block's row first (it asks each sentence), then each sentence again
    assert bt.feats == tuple(f for s in bt.sentences for f in feature_tuple(words(s.text)))
    for s in bt.sentences:
        assert s.feats == feature_tuple(words(s.text)) and s.feats is s.feats
    single = _block_text("One sentence about stemming words.")
    assert single.feats == single.sentences[0].feats == feature_tuple(words("One sentence about stemming words."))


def test_a_page_analysed_to_be_judged_alone_has_no_keys_and_is_not_learnt():
    import pytest

    html = '<html><body><div class="body"><p>Apple pie. Apple tart.</p><ul><li>Home</li></ul></div></body></html>'
    keyed, alone = analyse_page(parse_html(html)), analyse_page(parse_html(html), site=False)
    assert alone.fingerprint == "" and {b.key for b in alone.blocks} == {""}
    assert keyed.fingerprint and all(b.key for b in keyed.blocks)
    # everything else is the same analysis
    assert [(b.block.text, b.tag, b.ancestors, b.hints, b.near_hints) for b in alone.blocks] == [
        (b.block.text, b.tag, b.ancestors, b.hints, b.near_hints) for b in keyed.blocks
    ]
    stats = SiteStats()
    stats.add(keyed)
    for use in (stats.add, stats.page_view):
        with pytest.raises(ValueError, match="judging alone"):
            use(alone)
