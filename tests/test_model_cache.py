"""SST_MAX_MODELS: a worker keeps at most that many site models in memory; the least
recently used are written to disk and read back when their site comes up again, so the
crawl's output is the same as with every model kept."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from conftest import assert_exactly_once, crawl_in_subprocess
from story_pages import STORY_PAGES

from sst_cleaner import SiteCleaner
from sst_cleaner.scrapy._model_cache import ModelCache

PAGES = STORY_PAGES


def test_least_recently_used_models_go_to_disk_and_come_back(tmp_path):
    cache = ModelCache(2, str(tmp_path), SiteCleaner.load)
    models = {s: SiteCleaner().fit(PAGES[:n]) for s, n in (("a", 2), ("b", 3), ("c", 4))}
    for site, model in models.items():
        cache.put(site, model)
    assert len(cache) == 2 and cache.evicted == 1  # "a" went to disk
    back = cache.get("a")
    assert back is not None and back.n_pages == 2 and cache.reloaded == 1
    assert back.clean(PAGES[4]).text == models["a"].clean(PAGES[4]).text
    assert len(cache) == 2 and cache.evicted == 2  # "b" made room for it
    assert cache.get("zzz") is None


def test_saving_at_close_covers_evicted_models(tmp_path):
    cache = ModelCache(1, str(tmp_path / "spill"), SiteCleaner.load)
    (tmp_path / "spill").mkdir()
    cache.put("a", SiteCleaner().fit(PAGES[:2]))
    cache.put("b", SiteCleaner().fit(PAGES[:3]))
    out = tmp_path / "a.json"
    assert cache.save("a", str(out)) and SiteCleaner.load(out).n_pages == 2
    assert not cache.save("nope", str(tmp_path / "n.json"))


def test_a_crawl_with_one_model_in_memory_cleans_like_one_with_all(demo_server, tmp_path):
    base = {
        "SST_SITE_KEY": "test_scrapy_runner.section_key",
        "SST_SAMPLE_PAGES": 3,
        "SST_WORKERS": "process",
        "SST_PROCESSES": 1,
    }

    def crawl(name: str, max_models: int) -> dict:
        return crawl_in_subprocess(
            tmp_path, name, url=demo_server.url, kinds=["status"], settings=dict(base, SST_MAX_MODELS=max_models)
        )

    with ThreadPoolExecutor(2) as pool:
        one, every = pool.map(lambda args: crawl(*args), [("one-model", 1), ("every-model", 0)])
    for result in (one, every):
        assert_exactly_once(result["yielded"], (r["id"] for r in result["received"]))
    assert one["stats"].get("sst/models_built", 0) >= 3  # several sites, so models were evicted
    by_id = {r["id"]: (r["status"], r["text"]) for r in every["received"]}
    assert {r["id"]: (r["status"], r["text"]) for r in one["received"]} == by_id
    assert sum(status == "cleaned" for status, _ in by_id.values()) > len(by_id) / 2
