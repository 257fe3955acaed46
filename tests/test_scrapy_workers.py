"""Worker processes (``SST_WORKERS = "process"``): real crawls (one process each, see
tests/test_scrapy_runner.py) whose fitting, refining and cleaning run in worker processes,
including workers that die mid-crawl.

What must hold in every one: each item the spider yields reaches the pipelines exactly
once; an item whose cleaning was lost with a dead worker is flagged ``error`` (uncleaned),
counted in ``sst/errors/clean``, and the crawl goes on (new worker, or threads).
"""

from __future__ import annotations

import collections
import os
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import assert_exactly_once, crawl_in_subprocess, sst_stat

from sst_cleaner.scrapy._settings import load_config

PARALLEL_CRAWLS = 3
CRASH_MOD = 7  # crash_once: the first article page of bucket 3 of 7 kills its worker
#: every article page of this bucket kills its worker: more crashes than MAX_RESTARTS
CRASH_OFTEN = {"crash_mod": 2, "crash_bucket": 0}
CRASH_INIT = "test_scrapy_runner.register_crashing_method"

#: the same crawl in both modes; CETD is page-level and the model gets no refinement,
#: so each page's text cannot depend on where or when it was cleaned
SAME = dict(kinds=["dict", "status"], settings={"SST_SAMPLE_PAGES": 10, "SST_MAX_MODEL_PAGES": 10})

CRAWLS = {
    "process": dict(SAME, settings=dict(SAME["settings"], SST_WORKERS="process", SST_PROCESSES=2)),
    "thread": dict(SAME, settings=dict(SAME["settings"], SST_WORKERS="thread")),
    "crash_often": dict(
        crashing_method=True,
        settings={
            "SST_METHOD": "crashing",
            "SST_PARAMS": CRASH_OFTEN,
            "SST_WORKER_INIT": CRASH_INIT,
            "SST_WORKERS": "process",
            "SST_SAMPLE_PAGES": 5,
        },
    ),
    # a method the workers do not know (no SST_WORKER_INIT): threads instead
    "no_init": dict(faulty_method=True, max_pages=10, settings={"SST_METHOD": "faulty", "SST_WORKERS": "process"}),
}


def _crash_once(workdir, url: str) -> dict:
    marker = workdir / "crashed-url.txt"
    params = {"crash_mod": CRASH_MOD, "crash_bucket": 3, "crash_marker": str(marker)}
    result = crawl_in_subprocess(
        workdir,
        "crash_once",
        url=url,
        crashing_method=True,
        settings={
            "SST_METHOD": "crashing",
            "SST_PARAMS": params,
            "SST_WORKER_INIT": CRASH_INIT,
            "SST_WORKERS": "process",
            "SST_SAMPLE_PAGES": 5,
        },
    )
    result["crashed_url"] = marker.read_text(encoding="utf-8") if marker.exists() else None
    return result


def _reuse_pair(workdir, url: str) -> tuple[dict, dict]:
    """A thread-mode crawl of part of the site saves the model; a process-mode crawl of the
    whole site loads it in its worker, and learns the pages the first did not see."""
    base = {"SST_MODEL_DIR": str(workdir / "models"), "SST_SAMPLE_PAGES": 5}
    first = crawl_in_subprocess(
        workdir, "reuse-threads", url=url, settings=dict(base, SST_WORKERS="thread", CLOSESPIDER_PAGECOUNT=12)
    )
    second = crawl_in_subprocess(workdir, "reuse-processes", url=url, settings=dict(base, SST_WORKERS="process"))
    return first, second


@pytest.fixture(scope="module")
def crawls(demo_server, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("worker-crawls")
    with ThreadPoolExecutor(max_workers=PARALLEL_CRAWLS) as pool:
        futures = {
            "crash_once": pool.submit(_crash_once, workdir, demo_server.url),
            "reuse": pool.submit(_reuse_pair, workdir, demo_server.url),
        }
        for name, cfg in CRAWLS.items():
            futures[name] = pool.submit(crawl_in_subprocess, workdir, name, url=demo_server.url, **cfg)
        yield futures
        for future in futures.values():
            future.cancel()


def _exactly_once(result: dict) -> None:
    assert_exactly_once(result["yielded"], (r["id"] for r in result["received"]))


def _check_flags(result: dict) -> list[dict]:
    """Items with text are flagged cleaned/fallback, items without are flagged error, and
    every page whose cleaning failed is counted once in sst/errors/clean; returns the
    error items."""
    errors = []
    for r in result["received"]:
        if r["text"]:
            assert r["status"] in ("cleaned", "fallback"), r
        else:
            assert r["status"] == "error", r
            errors.append(r)
    pages = {r["id"].split("#", 1)[0] for r in errors}
    assert sst_stat(result, "errors/clean") == len(pages)
    assert sst_stat(result, "errors") == sum(v for k, v in result["stats"].items() if k.startswith("sst/errors/"))
    return errors


def test_process_mode_cleans_in_worker_processes_like_threads(crawls):
    proc, thread = crawls["process"].result(), crawls["thread"].result()
    for result in (proc, thread):
        _exactly_once(result)
        assert result["stats"]["finish_reason"] == "finished"
        assert len(result["yielded"]) == 60
        assert all(r["text"] and r["status"] == "cleaned" for r in result["received"])
        assert sst_stat(result, "models_built") == 1 and sst_stat(result, "errors") == 0
    # SST_PROCESSES = 2, but one site: the second worker is never started
    assert sst_stat(proc, "worker_processes") == 1
    assert "worker processes up" in proc["log"]
    assert sst_stat(thread, "worker_processes") == 0 and "worker process" not in thread["log"]
    # same pages, same text, whichever process cleaned them
    assert {r["id"]: r["text"] for r in proc["received"]} == {r["id"]: r["text"] for r in thread["received"]}


def test_worker_crash_loses_no_item_and_the_worker_restarts(crawls):
    result = crawls["crash_once"].result()
    _exactly_once(result)
    assert result["stats"]["finish_reason"] == "finished"
    assert result["crashed_url"], "no worker crashed: the test proves nothing"
    assert sst_stat(result, "worker_crashes") == 1 and sst_stat(result, "worker_restarts") == 1
    assert "died" in result["log"] and "starting a new one" in result["log"]
    errors = _check_flags(result)
    # the page being cleaned when its worker died: its items are delivered, uncleaned;
    # the calls queued behind it went to the new worker, which got the site's model
    # back, so every other item is cleaned by the site model
    crashed_path = "/" + result["crashed_url"].split("/", 3)[3]
    assert errors and all(r["id"].startswith(crashed_path + "#") for r in errors)
    assert sst_stat(result, "errors/clean") == 1
    assert all(r["status"] == "cleaned" for r in result["received"] if r not in errors)


def test_worker_crashing_again_and_again_falls_back_to_threads(crawls):
    result = crawls["crash_often"].result()
    _exactly_once(result)
    assert result["stats"]["finish_reason"] == "finished"
    assert sst_stat(result, "worker_restarts") == 3  # workers.MAX_RESTARTS
    assert sst_stat(result, "worker_crashes") == 4
    assert "go on in threads" in result["log"]
    _check_flags(result)
    assert sst_stat(result, "errors/clean") == 4  # one page per crash: the one being cleaned
    # after the fall-back, the pages that killed workers are cleaned in threads (the
    # method crashes only inside a worker process) with the site's model
    assert any(r["status"] == "cleaned" for r in result["received"])
    assert sst_stat(result, "status/cleaned") + sst_stat(result, "status/fallback") > sst_stat(result, "status/error")


def test_method_unknown_to_the_workers_falls_back_to_threads(crawls):
    result = crawls["no_init"].result()
    _exactly_once(result)
    assert "worker processes could not start" in result["log"] and "SST_WORKER_INIT" in result["log"]
    assert sst_stat(result, "errors/workers") == 1
    assert all(r["text"] for r in result["received"])


def test_model_saved_by_threads_is_loaded_by_a_worker(crawls):
    first, second = crawls["reuse"].result()
    _exactly_once(first)
    _exactly_once(second)
    assert sst_stat(first, "models_saved") == 1 and sst_stat(first, "worker_processes") == 0
    assert sst_stat(second, "models_loaded") == 1 and sst_stat(second, "worker_processes") >= 1
    assert sst_stat(second, "models_built") == 0 and sst_stat(second, "items_held") == 0
    # cleaned by the loaded model in the worker (not the page-level fallback), and saved
    # again by the worker that refined it with the pages the first crawl had not seen
    assert all(r["text"] and r["status"] == "cleaned" for r in second["received"])
    assert sst_stat(second, "pages_seen") > sst_stat(first, "pages_seen")
    assert sst_stat(second, "pages_refined") > 0 and sst_stat(second, "models_saved") == 1


# -- settings -------------------------------------------------------------------------------


def test_worker_settings():
    cfg = load_config({})
    assert cfg.workers == "process" and cfg.processes >= 1 and cfg.worker_init is None
    cfg = load_config({"SST_WORKERS": "thread", "SST_PROCESSES": "3", "SST_WORKER_INIT": "a.b"})
    assert (cfg.workers, cfg.processes, cfg.worker_init) == ("thread", 3, "a.b")
    with pytest.raises(ValueError, match="SST_WORKERS"):
        load_config({"SST_WORKERS": "fork"})
    with pytest.raises(ValueError, match="SST_PROCESSES"):
        load_config({"SST_PROCESSES": 0})
    with pytest.raises(ValueError, match="SST_WORKER_INIT"):
        load_config({"SST_WORKER_INIT": print})


def test_sites_are_pinned_to_workers_stably():
    from sst_cleaner.scrapy._workers import WorkerPool

    pool = WorkerPool(3, "cetd", {})
    keys = [f"site{i}.example" for i in range(60)]
    first = [pool.index(k) for k in keys]
    assert first == [WorkerPool(3, "cetd", {}).index(k) for k in keys]  # not per-process hash()
    assert set(first) == {0, 1, 2}
    assert collections.Counter(first).most_common(1)[0][1] < 40


def register_crash_op() -> None:
    """``init`` of the worker below: an operation "crash" that kills the worker mid-call
    (the production operation table has none)."""
    import os

    from sst_cleaner.scrapy import _workers

    _workers._OPS["crash"] = lambda site: os._exit(70)


def test_a_dead_worker_fails_its_calls_and_restarts_fresh():
    from concurrent.futures.process import BrokenProcessPool

    from sst_cleaner.scrapy._workers import WorkerPool

    pool = WorkerPool(1, "cetd", {}, init="test_scrapy_workers.register_crash_op")

    def result(future):  # no reactor reads the answers here: the pool does, while waited on
        pool.wait([future], 60)
        return future.result(timeout=0)

    try:
        first_pid = result(pool.start_first())
        crash, behind = pool.submit(0, "crash", "s"), pool.submit(0, "start", "s")
        for future in (crash, behind):  # the call it ran, and the one queued behind it
            with pytest.raises(BrokenProcessPool):
                result(future)
        assert not pool.alive(0)
        pool.restart(0)
        assert result(pool.start_first()) != first_pid
        assert pool.generation[0] == 1 and pool.restarts == 1 and pool.spawned == 2
    finally:
        pool.shutdown()


def test_pages_larger_than_the_pipes_cross_intact_and_in_order():
    """A page bigger than a worker's pipe holds, and an answer bigger than it, arrive
    whole, and the calls queued behind them are answered too."""
    from sst_cleaner import SiteCleaner
    from sst_cleaner.scrapy._workers import WorkerPool

    paragraphs = "".join(
        f"<p>Paragraph {i} tells the story of case {i * 7919 % 10007} in plain words.</p>" for i in range(40000)
    )
    big = f"<html><body><nav><a href='/'>Home</a></nav><article>{paragraphs}</article></body></html>".encode()
    assert len(big) > 2 << 20
    pool = WorkerPool(1, "cetd", {})
    try:
        calls = [pool.submit(0, "clean", "", "http://x/big", big, "utf-8", True, False)]
        calls += [pool.submit(0, "start", f"s{i}") for i in range(20)]
        pool.wait(calls, 300)
        fields = calls[0].result(timeout=0)
        assert fields.text == SiteCleaner("cetd").clean(big).text
        assert len(fields.text) > 1 << 20 and len(fields.sentences) > 30000
        pids = {f.result(timeout=0) for f in calls[1:]}
        assert len(pids) == 1 and pids != {os.getpid()}
    finally:
        pool.shutdown()
