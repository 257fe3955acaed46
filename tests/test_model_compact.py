"""The saved site model (format version 2) keeps what cleaning reads in a fraction of the
bytes of the full one (version 1), which still loads; cleaning with either gives the
same pages, and learning into a loaded model still counts a sentence seen again."""

from __future__ import annotations

import json
import os

import pytest

from sst_cleaner import ModelFormatError, SiteCleaner
from sst_cleaner.engine.methods.sitestats.site_stats import sentence_hash
from sst_cleaner.tools.demo import DemoSite
from sst_cleaner.tools.model_versions import version_1

FAST = {"page_time_budget": None, "site_time_budget": None}


@pytest.fixture(scope="module")
def site():
    demo = DemoSite(seed=11, n_articles=60)
    pages = [(f"http://demo.test{p}", demo.page(p)) for p in demo.paths]
    return pages[::2], pages[1::2]  # learnt, not learnt


def _texts(cleaner: SiteCleaner, pages) -> list:
    return [
        (r.text, r.status, [(b.xpath, b.label) for b in r.blocks]) for r in (cleaner.clean(h, url=u) for u, h in pages)
    ]


def test_the_compact_model_is_smaller_and_cleans_as_the_full_one(site, tmp_path):
    learnt, unseen = site
    cleaner = SiteCleaner(**FAST).fit(learnt)
    new, old = tmp_path / "new.json", tmp_path / "old.json"
    cleaner.save(new)
    old.write_text(json.dumps(version_1(cleaner)), encoding="utf-8")
    assert json.loads(new.read_text(encoding="utf-8"))["format_version"] == 2
    assert os.path.getsize(old) > 3 * os.path.getsize(new)
    from_new, from_old = SiteCleaner.load(new), SiteCleaner.load(old)
    assert from_new.n_pages == from_old.n_pages == len(learnt)
    expected = _texts(from_old, learnt + unseen)
    assert sum(1 for text, _s, _b in expected if text) > len(learnt + unseen) // 2
    assert _texts(from_new, learnt + unseen) == expected
    # saved again, a loaded model is the same file
    from_new.save(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == new.read_bytes()


def test_learning_after_a_load_counts_a_sentence_seen_on_one_page_before(tmp_path):
    shared = "A remark that only two pages of the site make, in their own words."

    def page(i: int, extra: str = "") -> str:
        return (
            "<html><body><nav><a href='/'>Home</a> <a href='/about'>About us</a></nav>"
            f"<article><h1>Story {i}</h1><p>Story {i} begins with its own words, number {i}.</p>{extra}</article>"
            "<footer>All rights reserved by the example site.</footer></body></html>"
        )

    cleaner = SiteCleaner(**FAST).fit([page(i, f"<p>{shared}</p>" if i == 0 else "") for i in range(4)])
    cleaner.save(tmp_path / "m.json")
    loaded = SiteCleaner.load(tmp_path / "m.json")
    h = sentence_hash(shared)
    assert h not in loaded._impl.stats.sent_df  # kept as a short hash only
    for learner in (cleaner, loaded):
        learner.partial_fit(page(9, f"<p>{shared}</p>"))
        assert learner._impl.stats.sent_df[h] == 2


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("page_fps", {"not a hash!": 6}, "11-character hash"),  # 6 pages
        ("sents", {"AAAAAAAAAAA": [999, 3]}, "sents values"),
        ("sents", {"AAAAAAAAAAA": [2, -1]}, "sents values"),
        ("sents", {"AAAAAAAAAAA": "2"}, "sents values"),
        ("sents", {"AAAAAAAAAA": [2, 3]}, "11-character hash"),
        ("sents", [], "sents must be an object"),
        ("nodes", {"AAAAAAAAAAA": [1, {}, 0]}, "nodes values"),
        ("nodes", {"AAAAAAAAAAA": [1, {"AAAAAAAAAAA": 50}, 0, {}]}, "count outside"),
        ("nodes", {"AAAAAAAAAAA": [1, {}, -5, {}]}, "nodes values"),
        ("nodes", {"AAAAAAAAAAA": [1, {}, 0, {"f": [-1.0, 0]}]}, "feature sum"),
        ("nodes", {"AAAAAAAAAAA": [1, {}, 0, {"f": "1"}]}, "feature sum"),
        ("nodes", {"AAAAAAAAAAA": [1, {}, 0, {"f": [1, 2, 3]}]}, "feature sum"),
        ("nodes", {"AAAAAAAAAAA": [1, {}, 0, [1]]}, "feature sums must be an object"),
        ("once", ["AAAAAAA"], "8-character hashes"),
        ("once", ["AAAAAAA!"], "8-character hashes"),
        ("once", "AAAAAAAA", "8-character hashes"),
        ("once", ["A" * 8 * 600], "over-long"),
    ],
)
def test_bad_compact_fields_are_refused(site, tmp_path, field, value, message):
    data = SiteCleaner(**FAST).fit(site[0][:6]).to_dict()
    data["model"]["site_stats"][field] = value
    path = tmp_path / "m.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ModelFormatError, match=message):
        SiteCleaner.load(path)


def test_a_version_1_model_is_checked_as_version_1(site, tmp_path):
    cleaner = SiteCleaner(**FAST).fit(site[0][:6])
    for data in (version_1(cleaner), cleaner.to_dict()):
        # each version's tables under the other's number
        data["format_version"] = 3 - data["format_version"]
        path = tmp_path / "m.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        with pytest.raises(ModelFormatError, match="exactly the keys"):
            SiteCleaner.load(path)
