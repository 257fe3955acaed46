"""A worker process stuck in C (where no time budget reaches) is stopped once it has
answered nothing for SST_WORKER_HANG_TIMEOUT, and handled as a worker that died: the
crawl finishes, every item arrives exactly once, and the pages queued behind the stuck
one are cleaned by a new worker.

A real crawl of the demo site through the add-on (tests/test_scrapy_runner.py), with the
"crashing" test method told to sleep (``time.sleep``, in C) instead of dying."""

from __future__ import annotations

from conftest import assert_exactly_once, crawl_in_subprocess, sst_stat

CRASH_INIT = "test_scrapy_runner.register_crashing_method"


def test_a_worker_stuck_in_c_is_stopped_and_replaced(demo_server, tmp_path):
    marker = tmp_path / "hung-url.txt"
    result = crawl_in_subprocess(
        tmp_path,
        "worker-hang",
        timeout=300,
        url=demo_server.url,
        crashing_method=True,
        settings={
            "SST_METHOD": "crashing",
            # the first article page of bucket 3 of 7 not fitted on makes its worker sleep
            # for an hour: far past every budget and the hang timeout
            "SST_PARAMS": {"crash_mod": 7, "crash_bucket": 3, "crash_marker": str(marker), "hang": 3600},
            "SST_WORKER_INIT": CRASH_INIT,
            "SST_WORKERS": "process",
            "SST_PROCESSES": 1,
            "SST_SAMPLE_PAGES": 5,
            "SST_WORKER_HANG_TIMEOUT": 20,
        },
    )
    assert marker.exists(), "no worker hung: the test proves nothing"
    assert result["stats"]["finish_reason"] == "finished"
    assert_exactly_once(result["yielded"], [r["id"] for r in result["received"]])
    assert sst_stat(result, "worker_hangs") == 1
    assert sst_stat(result, "worker_crashes") == 1 and sst_stat(result, "worker_restarts") == 1
    assert "SST_WORKER_HANG_TIMEOUT" in result["log"] and "starting a new one" in result["log"]
    # the page being cleaned when its worker was stopped: its items arrive uncleaned;
    # the pages queued behind it were cleaned by the new worker
    hung_path = "/" + marker.read_text(encoding="utf-8").split("/", 3)[3]
    errors = [r for r in result["received"] if r["status"] == "error"]
    assert errors and all(r["id"].startswith(hung_path + "#") for r in errors)
    assert sst_stat(result, "errors/clean") == 1
    assert all(r["status"] == "cleaned" for r in result["received"] if r not in errors)
