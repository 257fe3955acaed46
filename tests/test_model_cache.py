"""SST_MAX_MODELS: a worker, and the crawl process for its local copies, keep at most that
many site models in memory; the least recently used are written to disk and read back
when their site comes up again, so the crawl's output is the same as with every model
kept."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import assert_exactly_once, crawl_in_subprocess, sst_stat
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


def test_max_models_zero_keeps_every_model_in_memory(tmp_path):
    cache = ModelCache(0, str(tmp_path / "spill"), SiteCleaner.load)
    models = {s: SiteCleaner().fit(PAGES[:n]) for s, n in (("a", 2), ("b", 3), ("c", 4))}
    for site, model in models.items():
        cache.put(site, model)
    assert len(cache) == 3 and cache.evicted == cache.lost == 0
    assert all(cache.get(site) is model for site, model in models.items())
    assert not (tmp_path / "spill").exists()  # nothing was written out
    assert cache.save("a", str(tmp_path / "a.json")) and SiteCleaner.load(tmp_path / "a.json").n_pages == 2
    assert not cache.save("nope", str(tmp_path / "n.json"))


# -- real crawls: a worker, and the crawl process, with one model in memory ------------------

#: several sites (three of articles, six of section pages), so one model in memory
#: means evictions; SST_PROCESSES 1: every site in the same worker; one page at a time,
#: so pages keep coming after the first models are built
BASE = {
    "SST_SITE_KEY": "test_scrapy_runner.section_key",
    "SST_SAMPLE_PAGES": 3,
    "SST_PROCESSES": 1,
    "CONCURRENT_REQUESTS": 1,
    "DOWNLOAD_DELAY": 0.1,
}
CRASH_INIT = "test_scrapy_runner.register_crashing_method"


def _crawl(workdir, url: str, name: str, max_models: int, **settings) -> dict:
    return crawl_in_subprocess(
        workdir,
        name,
        url=url,
        kinds=["status"],
        probe_store=True,  # store.get on every page, as a link extractor would
        # then the first page of each site with a model again, twice round: however the
        # crawl's pages and builds interleaved, sites evicted meanwhile are asked for
        revisit=True,
        settings=dict(BASE, SST_MAX_MODELS=max_models, **settings),
    )


def _thread_crawl(workdir, url: str, name: str, max_models: int) -> dict:
    models = workdir / f"models-{name}"
    result = _crawl(workdir, url, name, max_models, SST_WORKERS="thread", SST_MODEL_DIR=str(models))
    result["saved_pages"] = {p.name: SiteCleaner.load(p).n_pages for p in models.glob("site-*.json")}
    return result


def _crash_crawl(workdir, url: str, name: str, max_models: int) -> dict:
    """After the crawl, once every site has its model and the evicted copies are on
    disk, the spider goes back to each site's first page (as ``...?again``, items again):
    the first of those pages cleaned kills the worker, once; the new one cleans the rest."""
    marker = workdir / f"crashed-{name}.txt"
    params = {"crash_url_part": "?again", "crash_marker": str(marker)}
    result = crawl_in_subprocess(
        workdir,
        name,
        url=url,
        kinds=["status"],
        crashing_method=True,
        probe_store=True,
        revisit=True,
        revisit_query="?again",
        settings=dict(
            BASE, SST_MAX_MODELS=max_models, SST_METHOD="crashing", SST_PARAMS=params, SST_WORKER_INIT=CRASH_INIT
        ),
    )
    result["crashed"] = marker.exists()
    return result


@pytest.fixture(scope="module")
def crawls(demo_server, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("max-models")
    url = demo_server.url
    jobs = {
        "one-model": (_crawl, "one-model", 1),
        "every-model": (_crawl, "every-model", 0),
        "thread-one": (_thread_crawl, "thread-one", 1),
        "thread-every": (_thread_crawl, "thread-every", 0),
        "crash-one": (_crash_crawl, "crash-one", 1),
        "crash-every": (_crash_crawl, "crash-every", 0),
    }
    with ThreadPoolExecutor(2) as pool:
        futures = {key: pool.submit(func, workdir, url, name, n) for key, (func, name, n) in jobs.items()}
        yield futures
        for future in futures.values():
            future.cancel()


def _outputs(result: dict) -> dict:
    return {r["id"]: (r["status"], r["text"]) for r in result["received"]}


def _exactly_once(result: dict) -> None:
    assert_exactly_once(result["yielded"], (r["id"] for r in result["received"]))


def test_a_crawl_with_one_model_in_memory_cleans_like_one_with_all(crawls):
    one, every = crawls["one-model"].result(), crawls["every-model"].result()
    for result in (one, every):
        _exactly_once(result)
    assert one["stats"].get("sst/models_built", 0) >= 3  # several sites, so models were evicted
    by_id = _outputs(every)
    assert _outputs(one) == by_id
    assert sum(status == "cleaned" for status, _ in by_id.values()) > len(by_id) / 2


def test_the_crawl_process_keeps_at_most_max_models_copies(crawls):
    one, every = crawls["one-model"].result(), crawls["every-model"].result()
    assert every["probe"]["peak_in_use"] >= 3  # unbounded: a copy of every site's model
    assert one["probe"]["peak_in_use"] == 1
    assert sst_stat(one, "local_models_evicted") >= 2 and sst_stat(every, "local_models_evicted") == 0
    # store.get read the evicted copies back, every time: a link extractor never finds
    # a site with a model without it
    assert one["probe"]["gets"] > 0 and one["probe"]["missing"] == 0
    # the spider's revisits, after the crawl: all but maybe the first asked for a site
    # whose copy was on disk, and each of those read it back
    assert one["probe"]["revisits"] >= 4 and one["probe"]["revisited_on_disk"] >= one["probe"]["revisits"] - 1
    assert sst_stat(one, "local_models_reloaded") >= one["probe"]["revisited_on_disk"]
    assert sst_stat(one, "local_models_lost") == 0 and every["probe"]["revisited_on_disk"] == 0
    assert sst_stat(one, "errors") == 0
    assert sst_stat(one, "peak_local_models") >= 1


def test_thread_mode_evicts_models_with_their_refinements(crawls):
    one, every = crawls["thread-one"].result(), crawls["thread-every"].result()
    for result in (one, every):
        _exactly_once(result)
        assert sst_stat(result, "refinements_skipped") == 0 and sst_stat(result, "errors") == 0
        # every page a model learnt is in its saved file: the sample it was built from
        # and each refinement, also those of models written out and read back meanwhile
        built = sum(int(n) for n in re.findall(r"model built for site \S+ from (\d+) pages", result["log"]))
        assert sum(result["saved_pages"].values()) == built + sst_stat(result, "pages_refined")
        assert len(result["saved_pages"]) == sst_stat(result, "models_built") == sst_stat(result, "models_saved")
    assert sst_stat(one, "pages_refined") > 0
    assert one["probe"]["peak_in_use"] == 1 and one["probe"]["missing"] == 0
    assert sst_stat(one, "local_models_evicted") >= 2
    assert one["probe"]["revisits"] >= 4 and one["probe"]["revisited_on_disk"] >= one["probe"]["revisits"] - 1
    assert sst_stat(one, "local_models_reloaded") >= one["probe"]["revisited_on_disk"]
    assert _outputs(one) == _outputs(every)


def test_a_restarted_worker_gets_back_the_models_evicted_to_disk(crawls):
    one, every = crawls["crash-one"].result(), crawls["crash-every"].result()
    for result in (one, every):
        _exactly_once(result)
        assert result["crashed"] and sst_stat(result, "worker_restarts") == 1
    given = re.search(r"given back (\d+) models \((\d+) read from their files\)", one["log"])
    assert given and int(given[2]) >= 1, "no evicted model to give back: the test proves nothing"
    assert sst_stat(one, "local_models_evicted") >= 1
    # the page being cleaned when the worker died is flagged error in each crawl; every
    # other item is cleaned as in the crawl that kept every model: the new worker got
    # the evicted models back (without them its sites' pages would get the fallback)
    errors = {i for result in (one, every) for i, (status, _) in _outputs(result).items() if status == "error"}
    assert len(errors) <= 2
    kept = {i: out for i, out in _outputs(one).items() if i not in errors}
    assert kept == {i: out for i, out in _outputs(every).items() if i not in errors}
    assert sum(status == "cleaned" for status, _ in kept.values()) > len(kept) / 2
    # the pages cleaned after the restart, of every site, were cleaned with its model
    after = [status for i, (status, _) in _outputs(one).items() if i.startswith("again:") and i not in errors]
    assert len(after) >= 3 and set(after) == {"cleaned"}
