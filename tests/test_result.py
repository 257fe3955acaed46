"""CleanResult.from_blocks: the text and sentences of a result made of labelled blocks."""

from sst_cleaner.engine._result import INFORMATIVE, NOISE, Block, CleanResult


def test_informative_blocks_make_the_text_and_the_sentences():
    blocks = [
        Block("/a", "Home. News.", NOISE),
        Block("/b", "First point. Second point.", INFORMATIVE, 0.9),
        Block("/c", "Third point.", INFORMATIVE),
    ]
    r = CleanResult.from_blocks(blocks, "m", "Title")
    assert r.text == "First point. Second point.\nThird point."
    assert r.sentences == ["First point.", "Second point.", "Third point."]
    assert (r.blocks, r.method, r.title, r.link_blocks, r.status) == (blocks, "m", "Title", [], "ok")


def test_a_block_decided_per_sentence_gives_its_kept_sentences():
    blocks = [
        Block("/a", "Share this. The story goes on.", INFORMATIVE, sentences=["The story goes on."]),
        Block("/b", "Posted by Ann.", NOISE, sentences=[]),
        Block("/c", "More. Text.", INFORMATIVE),
    ]
    r = CleanResult.from_blocks(blocks, "m", link_blocks=[{"xpath": "/a", "links": []}])
    assert r.text == "The story goes on.\nMore. Text."
    assert r.sentences == ["The story goes on.", "More.", "Text."]
    assert r.link_blocks == [{"xpath": "/a", "links": []}]
