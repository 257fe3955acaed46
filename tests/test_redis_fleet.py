"""Crawls sharing site models through a real Redis (SST_MODEL_STORE): several crawl
processes, a builder killed while it fits, Redis failing mid-crawl, hostile model values.

What must hold in every one: each item the spider yields reaches the pipelines exactly
once, whatever Redis does.
"""

from __future__ import annotations

import collections
import json
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import ROOT, TESTS, _env, assert_exactly_once, sst_stat
from redis_server import RedisServer

from sst_cleaner.engine._cleaner import SiteCleaner
from sst_cleaner.scrapy._redis_store import ModelIdentity, RedisFleet, parse_model_json
from sst_cleaner.scrapy._settings import RedisConfig

SECTIONS = "test_scrapy_runner.section_key"  # several sites on one demo server


def _fleet(
    server_url: str,
    prefix: str,
    method: str = "cetd",
    sample_pages: int = 5,
    spider: str = "probe",
    project: str = "scrapybot",
    params: dict | None = None,
) -> RedisFleet:
    """The keys a crawl of ``spider`` in ``project`` with this method and sample size uses
    (the namespace's default template, the model's identity)."""
    identity = ModelIdentity.of(method, params or {}, sample_pages)
    return RedisFleet(RedisConfig(url=server_url, prefix=prefix, namespace=f"{project}:{spider}"), identity=identity)


def _start_crawl(workdir: Path, name: str, **cfg) -> tuple[subprocess.Popen, Path]:
    """A crawl of tests/test_scrapy_runner.py's spider in a new process (via
    tests/redis_fleet_runner.py); returns the process and its output file."""
    out = workdir / f"crawl-{name}.json"
    cfg["out"] = str(out)
    cfg_path = workdir / f"config-{name}.json"
    cfg_path.write_text(json.dumps(cfg), encoding="utf-8")
    log = open(workdir / f"log-{name}.txt", "w", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, str(TESTS / "redis_fleet_runner.py"), str(cfg_path)],
        stdout=subprocess.DEVNULL,
        stderr=log,
        env=_env(),
        cwd=str(workdir),
    )
    log.close()
    return proc, out


def _finish(proc: subprocess.Popen, out: Path, timeout: float = 180) -> dict:
    proc.wait(timeout=timeout)
    log = (out.parent / out.name.replace("crawl-", "log-").replace(".json", ".txt")).read_text()
    assert proc.returncode == 0 and out.exists(), log[-4000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    result["log"] = log
    return result


def _exactly_once(result: dict) -> None:
    assert_exactly_once(result["yielded"], (r["id"] for r in result["received"]))


def _wait_for(predicate, what: str = "", alive: tuple = (), timeout: float = 600) -> None:
    """Wait until ``predicate()`` holds. Fails at once if a process in ``alive`` ended (its
    crawl can no longer make it true); ``timeout`` only guards against a hung test, the
    condition is what is waited on, so a loaded machine only makes it slower."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        ended = [proc.args[-1] for proc in alive if proc.poll() is not None]
        if ended:
            raise AssertionError(f"a crawl ended ({ended}) before {what}")
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


# -- several workers, one shared queue (scrapy-redis) ------------------------------------


def _fleet_worker(workdir: Path, i: int, site_url: str, redis_url: str, workers: int) -> dict:
    feed, stats = workdir / f"items-{i}.jsonl", workdir / f"stats-{i}.json"
    cmd = [
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        "fleet",
        "-a",
        f"url={site_url}",
        "-a",
        f"workers={workers}",
        "-a",
        f"stats_out={stats}",
        "-a",
        "grace=1",
        "-a",
        "quiet=1",
        "-O",
        str(feed),
        "-s",
        f"REDIS_URL={redis_url}",
        "-s",
        f"SST_SITE_KEY={SECTIONS}",
        "-s",
        "SST_SAMPLE_PAGES=5",
        "-s",
        "SST_METHOD=default",
        "-s",
        "DOWNLOAD_DELAY=0.25",
        "-s",
        "CONCURRENT_REQUESTS_PER_DOMAIN=1",
        "-s",
        "SST_WORKERS=process",
        "-s",
        "SST_PROCESSES=1",
        "-s",
        "LOG_LEVEL=INFO",
        "-s",
        "SST_REDIS_MERGE_PAGES=2",
        "-s",
        "SST_REDIS_PREFIX=two",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=_env(), cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr[-4000:]
    items = [json.loads(line) for line in feed.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {"items": items, "stats": json.loads(stats.read_text()), "log": proc.stderr}


def test_two_workers_share_the_queue_and_learn_each_site_once(demo_server, tmp_path):
    with RedisServer() as redis_server, ThreadPoolExecutor(2) as pool:
        runs = [
            f.result()
            for f in [pool.submit(_fleet_worker, tmp_path, i, demo_server.url, redis_server.url, 2) for i in range(2)]
        ]
        fleet = _fleet(redis_server.url, "two", "default", 5, "fleet", "sst_cleaner_examples")
        shared_pages = {
            s: int(fleet.client.hget(fleet.key(s, "model"), "pages"))
            for s in ("articles-0", "articles-1", "articles-2")
        }
        fleet.close()
    site = demo_server.site
    articles = sorted(demo_server.url.rstrip("/") + p for p in site.paths if p.startswith("/article/"))
    urls = [item["url"] for run in runs for item in run["items"]]
    assert sorted(urls) == articles  # every article once, by one worker or the other
    assert all(run["items"] for run in runs), "one worker crawled everything: nothing was shared"
    assert all(item["text"] and item["sst_status"] in ("cleaned", "fallback") for run in runs for item in run["items"])
    # each site's model was fitted by exactly one worker; the other loaded it when it
    # needed it
    built = collections.Counter(
        site for run in runs for site in re.findall(r"model built for site (\S+) from", run["log"])
    )
    loaded = collections.Counter(
        site for run in runs for site in re.findall(r"loaded the fleet's model of site (\S+) ", run["log"])
    )
    expected = {"articles-0", "articles-1", "articles-2"}  # the sites with more than one page
    assert set(built) == expected and max(built.values()) == 1, built
    assert sum(sst_stat(run, "models_built") for run in runs) == len(expected)
    assert sum(sst_stat(run, "redis/models_published") for run in runs) == len(expected)
    assert sum(sst_stat(run, "redis/models_loaded") for run in runs) == sum(loaded.values()) >= 1
    for run in runs:
        assert sst_stat(run, "redis/down") == 0 and sst_stat(run, "errors") == 0
        assert "Spider closed (finished)" in run["log"]
    # later pages were merged into the fleet's models, each page once: a model's pages
    # are its fit's plus the pages merged into it (the crawl is slowed down, one request
    # at a time per worker, so that pages still come after the models are built)
    fitted = {
        m[0]: int(m[1])
        for run in runs
        for m in re.findall(r"published the model of site (\S+) for the fleet \(version 1, (\d+) pages", run["log"])
    }
    merged = sum(sst_stat(run, "redis/pages_merged") for run in runs)
    assert merged >= 2 and sum(sst_stat(run, "redis/merges") for run in runs) >= 1, merged
    assert sum(shared_pages.values()) == sum(fitted.values()) + merged, (shared_pages, fitted, merged)
    # each page was crawled by one worker only (the shared duplicate filter)
    assert sum(run["stats"].get("sst/pages_seen", 0) for run in runs) == len(
        [p for p in site.paths if p == "/" or p.startswith(("/section/", "/article/"))]
    )


# -- the builder dies while it fits ------------------------------------------------------


def _renewals(client, lock: bytes | str, token: bytes, wanted: int):
    """A condition for _wait_for: the lock's time to live went up ``wanted`` times (its
    holder renewed it) while it stayed ``token``'s."""
    seen = {"last": None, "renewed": 0}

    def check() -> bool:
        assert client.get(lock) == token, "the builder lost its lock while alive"
        ttl = client.pttl(lock)
        if seen["last"] is not None and ttl > seen["last"]:
            seen["renewed"] += 1
        seen["last"] = ttl
        return seen["renewed"] >= wanted

    return check


def test_a_builder_killed_mid_fit_is_taken_over_in_seconds(demo_server, redis_server, tmp_path):
    """The default lock lives a few seconds and its builder renews it while it fits; once
    the builder dies, another worker builds the site within seconds (not the 30 s the
    lock used to live)."""
    prefix = "killed"
    fleet = _fleet(redis_server.url, prefix, "slowfit")
    lock = fleet.key("127.0.0.1", "lock")
    base = {
        "SST_MODEL_STORE": redis_server.url,
        "SST_REDIS_PREFIX": prefix,
        "SST_METHOD": "slowfit",
        "SST_WORKERS": "thread",
        "SST_SAMPLE_PAGES": 5,
    }
    # A: its fit sleeps ten minutes; it is killed while it holds the site's lock
    doomed, _ = _start_crawl(tmp_path, "doomed", url=demo_server.url, slow_fit=600, settings=base)
    try:
        _wait_for(lambda: fleet.client.exists(lock), what="the first worker to take the build lock", alive=(doomed,))
        token = fleet.client.get(lock)
        assert 0 < fleet.client.pttl(lock) <= 5000  # a short lock
        # B: finds the shared sample complete and waits for A, which renews its lock
        proc, out = _start_crawl(tmp_path, "survivor", url=demo_server.url, slow_fit=0, settings=base)
        b_log = tmp_path / "log-survivor.txt"
        _wait_for(
            lambda: "waiting for another worker" in b_log.read_text(), what="B to wait for A", alive=(doomed, proc)
        )
        _wait_for(_renewals(fleet.client, lock, token, 3), what="A to renew its lock", alive=(doomed, proc))
        assert doomed.poll() is None
    finally:
        doomed.send_signal(signal.SIGKILL)
        doomed.wait()
    killed = time.monotonic()
    _wait_for(
        lambda: "let it go or expired" in b_log.read_text(), timeout=120, what="B to take the site over", alive=(proc,)
    )
    # generous for a loaded machine, and still less than the old 30 s lock alone
    assert time.monotonic() - killed < 25
    result = _finish(proc, out)
    _exactly_once(result)
    assert sst_stat(result, "redis/takeovers") == 1
    assert sst_stat(result, "models_built") == 1 and sst_stat(result, "redis/models_published") == 1
    assert all(r["text"] for r in result["received"])
    builder = fleet.client.hget(fleet.key("127.0.0.1", "model"), "builder").decode()
    assert builder.endswith(f":{proc.pid}")
    assert fleet.client.hget(fleet.key("127.0.0.1", "model"), "version") == b"1"


def test_workers_waiting_for_a_build_when_redis_dies_do_not_fit_the_site_while_it_is_down(demo_server, tmp_path):
    """A fits a site for the fleet (slowly) while B and C wait for it, when Redis is
    SIGKILLed; it comes back empty a few seconds later. B and C go on crawling, their own
    samples complete, but they do not fit the site while Redis is down (A may have: each
    waiting worker fitting it too would make as many fits); once Redis answers they claim
    it again, so it is fitted at most twice (A's interrupted build, and one build through
    the new Redis), and every item arrives once."""
    with RedisServer() as server:
        prefix = "outage"
        fleet = _fleet(server.url, prefix, "slowfit")
        lock = fleet.key("127.0.0.1", "lock")
        base = {
            "SST_MODEL_STORE": server.url,
            "SST_REDIS_PREFIX": prefix,
            "SST_METHOD": "slowfit",
            "SST_WORKERS": "thread",
            "SST_SAMPLE_PAGES": 5,
            "SST_REDIS_TIMEOUT": 1.0,
        }
        procs: dict[str, subprocess.Popen] = {}
        outs: dict[str, Path] = {}
        logs = {name: tmp_path / f"log-{name}.txt" for name in "abc"}
        try:
            # A's fit sleeps a minute: B and C start and wait for it, even on a loaded machine
            procs["a"], outs["a"] = _start_crawl(tmp_path, "a", url=demo_server.url, slow_fit=60, settings=base)
            _wait_for(lambda: fleet.client.exists(lock), what="A to take the build lock", alive=(procs["a"],))
            for name in "bc":
                procs[name], outs[name] = _start_crawl(tmp_path, name, url=demo_server.url, slow_fit=0, settings=base)
            _wait_for(
                lambda: all("waiting for another worker" in logs[n].read_text() for n in "bc"),
                what="B and C to wait for A",
                alive=tuple(procs.values()),
            )
            server.proc.kill()  # no goodbye, no save: it comes back empty
            server.proc.wait()
            server.proc = None
            _wait_for(
                lambda: all("goes on with local models" in logs[n].read_text() for n in "bc"),
                what="B and C to go local",
                alive=tuple(procs.values()),
            )
            time.sleep(5)  # the outage: B and C crawl on, their own samples complete
            server.start()
            results = {name: _finish(procs[name], outs[name], timeout=300) for name in "abc"}
            shared = fleet.client.hget(fleet.key("127.0.0.1", "model"), "builder")
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.kill()
            fleet.close()
    for result in results.values():
        _exactly_once(result)
        assert all(r["text"] for r in result["received"])
    for name in "bc":
        log = results[name]["log"]
        down, back = log.index("goes on with local models"), log.find("answers again: back to sharing")
        assert back > down, name  # it shared again before its crawl ended
        assert "model built for site" not in log[down:back], name  # not fitted while Redis was down
    fits = {name: sst_stat(r, "models_built") for name, r in results.items()}
    assert sum(fits.values()) <= 2, fits
    assert shared is not None  # shared again through the new Redis


# -- Redis fails mid-crawl ---------------------------------------------------------------


@pytest.mark.parametrize("how", ["stopped", "hung"])
def test_redis_failing_mid_crawl_leaves_local_models_and_loses_no_item(demo_server, tmp_path, how):
    with RedisServer() as server:
        fleet = _fleet(server.url, "sst", sample_pages=10)
        proc, out = _start_crawl(
            tmp_path,
            how,
            url=demo_server.url,
            kinds=["dict", "status"],
            settings={
                "SST_MODEL_STORE": server.url,
                "SST_SITE_KEY": SECTIONS,
                "SST_SAMPLE_PAGES": 10,
                "SST_WORKERS": "thread",
                "DOWNLOAD_DELAY": 0.1,
                "SST_REDIS_TIMEOUT": 0.3,
            },
        )
        try:
            _wait_for(lambda: fleet.client.exists(fleet.total_key), what="a page shared through Redis", alive=(proc,))
            if how == "stopped":
                server.stop()
            else:  # alive but silent: every call times out
                server.proc.send_signal(signal.SIGSTOP)
            result = _finish(proc, out)
        finally:
            if server.proc is not None:
                server.proc.send_signal(signal.SIGCONT)
            fleet.close()
    _exactly_once(result)
    assert result["stats"]["finish_reason"] == "finished"
    assert sst_stat(result, "redis/down") == 1 and sst_stat(result, "redis/errors") >= 1
    assert result["log"].count("goes on with local models") == 1  # said once
    assert sst_stat(result, "models_built") >= 1
    for r in result["received"]:
        assert r["text"] and r["status"] in ("cleaned", "fallback"), r


# -- hostile values in the model keys -----------------------------------------------------


def test_hostile_model_values_are_rejected_and_the_models_rebuilt(demo_server, redis_server, tmp_path):
    prefix = "hostile"
    fleet = _fleet(redis_server.url, prefix)
    # a pickle where a hash belongs, and a model whose JSON holds NaN
    fleet.client.set(fleet.key("articles-0", "model"), b"\x80\x04\x95cos\nsystem\n")
    nan = b'{"format":"sst-cleaner-model","format_version":1,"method":"cetd","params":{},"model":{"n_pages":NaN}}'
    fleet.client.hset(fleet.key("articles-1", "model"), mapping={"json": nan, "version": 41})
    proc, out = _start_crawl(
        tmp_path,
        "hostile",
        url=demo_server.url,
        kinds=["dict", "status"],
        settings={
            "SST_MODEL_STORE": redis_server.url,
            "SST_REDIS_PREFIX": prefix,
            "SST_SITE_KEY": SECTIONS,
            "SST_SAMPLE_PAGES": 5,
            "SST_WORKERS": "thread",
        },
    )
    result = _finish(proc, out)
    _exactly_once(result)
    assert sst_stat(result, "redis/models_rejected") == 2
    assert sst_stat(result, "errors") == 2
    assert result["log"].count("rejected the shared model") == 2
    assert sst_stat(result, "redis/down") == 0
    for site in ("articles-0", "articles-1"):  # built again and published in their place
        raw, version = fleet.read_model(site)
        assert version == "1"  # a new model, not the hostile one (41)
        assert SiteCleaner.from_dict(parse_model_json(raw, 10**7)).method == "cetd"
    assert all(r["text"] and r["status"] in ("cleaned", "fallback") for r in result["received"])


def test_scrapy_redis_without_a_model_store_hands_held_items_over_directly(demo_server, tmp_path):
    """scrapy-redis's scheduler alone: the items held at idle cannot leave through a
    flush request (it would go to the shared queue), so they go to the pipelines directly."""
    with RedisServer() as redis_server:
        feed, stats = tmp_path / "items.jsonl", tmp_path / "stats.json"
        cmd = [
            sys.executable,
            "-m",
            "scrapy",
            "crawl",
            "fleet",
            "-a",
            f"url={demo_server.url}",
            "-a",
            f"stats_out={stats}",
            "-a",
            "grace=0",
            "-O",
            str(feed),
            "-s",
            f"REDIS_URL={redis_server.url}",
            "-s",
            "SST_MODEL_STORE=",
            "-s",
            "SST_SAMPLE_PAGES=1000",
            "-s",
            "SST_WORKERS=thread",
            "-s",
            "LOG_LEVEL=INFO",
        ]
        # before the direct hand-over this crawl never ended: the flush request could not
        # be queued, and the spider was kept open waiting for it
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=_env(), cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr[-4000:]
    urls = [json.loads(line)["url"] for line in feed.read_text(encoding="utf-8").splitlines() if line.strip()]
    articles = [p for p in demo_server.site.paths if p.startswith("/article/")]
    assert sorted(urls) == sorted(demo_server.url.rstrip("/") + p for p in articles)
    crawl_stats = json.loads(stats.read_text())
    assert crawl_stats.get("sst/items_held") == len(articles)  # every item waited for idle
    assert "held items sent to the item pipelines directly" in proc.stderr
    assert "sst_cleaner.scrapy._fleet" not in proc.stderr and " ERROR: " not in proc.stderr
    assert crawl_stats.get("sst/flushes", 0) == 0


# -- two crawls on one Redis --------------------------------------------------------------

SITES = ("articles-0", "articles-1", "articles-2")  # the demo's sites with a model


def _crawl_on(server_url: str, prefix: str, method: str) -> dict:
    return {
        "SST_MODEL_STORE": server_url,
        "SST_REDIS_PREFIX": prefix,
        "SST_METHOD": method,
        "SST_SITE_KEY": SECTIONS,
        "SST_SAMPLE_PAGES": 5,
        "SST_WORKERS": "thread",
    }


def _models(fleet: RedisFleet) -> dict:
    """site -> (version, builder) of the models stored under ``fleet``'s keys."""
    out = {}
    for site in SITES:
        fields = fleet.client.hmget(fleet.key(site, "model"), "version", "builder", "method")
        if fields[0] is not None:
            out[site] = (fields[0].decode(), fields[1].decode(), fields[2].decode())
    return out


def _crawl(tmp_path: Path, name: str, demo_url: str, settings: dict, spider: str = "probe") -> dict:
    proc, out = _start_crawl(tmp_path, name, url=demo_url, spider_name=spider, settings=settings)
    result = _finish(proc, out)
    _exactly_once(result)
    assert sst_stat(result, "redis/models_rejected") == 0 and sst_stat(result, "redis/down") == 0, name
    return result


def test_crawls_of_other_spiders_and_methods_keep_their_own_models(demo_server, redis_server, tmp_path):
    url, prefix = redis_server.url, "neighbours"
    a = _fleet(url, prefix, "cetd", spider="probe")
    b = _fleet(url, prefix, "default", spider="other")
    c = _fleet(url, prefix, "default", spider="probe")  # the first spider, another method
    # one after the other: each crawl publishes its own models and leaves the others'
    _crawl(tmp_path, "a1", demo_server.url, _crawl_on(url, prefix, "cetd"))
    a_models = _models(a)
    assert set(a_models) == set(SITES) and all(m[2] == "cetd" for m in a_models.values()), a_models
    _crawl(tmp_path, "b1", demo_server.url, _crawl_on(url, prefix, "default"), spider="other")
    _crawl(tmp_path, "c1", demo_server.url, _crawl_on(url, prefix, "default"))
    assert _models(a) == a_models  # neither deleted nor replaced
    assert set(_models(b)) == set(_models(c)) == set(SITES)
    assert all(m[2] == "default" for m in [*_models(b).values(), *_models(c).values()])
    # a second crawl of the first spider reuses its models: nothing fitted
    again = _crawl(tmp_path, "a2", demo_server.url, _crawl_on(url, prefix, "cetd"))
    assert sst_stat(again, "models_built") == 0 and sst_stat(again, "redis/models_published") == 0
    assert sst_stat(again, "redis/models_loaded") == len(SITES)
    assert _models(a) == a_models

    # at once, on fresh keys: both crawls build and keep their own
    prefix = "together"
    with ThreadPoolExecutor(2) as pool:
        runs = list(
            pool.map(
                lambda args: _crawl(tmp_path, *args),
                [
                    ("a3", demo_server.url, _crawl_on(url, prefix, "cetd"), "probe"),
                    ("b3", demo_server.url, _crawl_on(url, prefix, "default"), "other"),
                ],
            )
        )
    fleets = (_fleet(url, prefix, "cetd"), _fleet(url, prefix, "default", spider="other"))
    for run, fleet, method in zip(runs, fleets, ("cetd", "default")):
        models = _models(fleet)
        assert set(models) == set(SITES), models
        assert all(made_by == method for _, _, made_by in models.values()), models
        # published once each (cetd's models are never merged into; the default method's
        # get the crawl's later pages merged at its close: later versions, same crawl)
        assert method != "cetd" or all(version == "1" for version, _, _ in models.values()), models
        assert sst_stat(run, "redis/models_published") == len(SITES)
        assert sst_stat(run, "redis/models_foreign") == 0


# -- Redis killed and restarted empty ------------------------------------------------------


def test_after_redis_restarts_empty_the_crawl_shares_again(demo_server, tmp_path):
    with RedisServer() as server:
        fleet = _fleet(server.url, "heal", sample_pages=30)
        proc, out = _start_crawl(
            tmp_path,
            "heal",
            url=demo_server.url,
            settings={
                "SST_MODEL_STORE": server.url,
                "SST_REDIS_PREFIX": "heal",
                "SST_SITE_KEY": SECTIONS,
                # sites stay held until the end of the crawl, then are built through Redis
                "SST_SAMPLE_PAGES": 30,
                "SST_WORKERS": "thread",
                "DOWNLOAD_DELAY": 0.3,
                "SST_REDIS_TIMEOUT": 2.0,
            },
        )
        log = tmp_path / "log-heal.txt"
        try:
            _wait_for(lambda: fleet.client.exists(fleet.total_key), what="a page shared through Redis")
            server.proc.kill()  # no goodbye, no save: it comes back empty
            server.proc.wait()
            server.proc = None
            _wait_for(lambda: "goes on with local models" in log.read_text(), what="the crawl to go local")
            server.start()
            assert not fleet.client.exists(fleet.total_key)  # empty
            _wait_for(lambda: "answers again" in log.read_text(), timeout=30, what="the crawl to share again")
            assert proc.poll() is None, "the crawl ended before Redis came back: nothing shown"
            result = _finish(proc, out)
            models = _models(fleet)
        finally:
            if proc.poll() is None:
                proc.kill()
            fleet.close()
    _exactly_once(result)
    assert sst_stat(result, "redis/down") == 1 and sst_stat(result, "redis/reconnects") == 1
    assert sst_stat(result, "redis/local_seconds") > 0
    # the sites gathered after the outage were built once, through the new Redis
    assert models and all(builder.endswith(f":{proc.pid}") for _, builder, _ in models.values()), models
    assert sst_stat(result, "redis/models_published") == len(models)
    assert all(r["text"] for r in result["received"])


# -- a worker killed while it holds items ---------------------------------------------------


def _fleet_cmd(workdir: Path, name: str, site_url: str, redis_url: str, grace: int, **more) -> list[str]:
    """A `scrapy crawl fleet` worker that holds every item until its crawl ends (a sample
    it never completes), so a worker killed mid-crawl dies holding items."""
    settings = {
        "REDIS_URL": redis_url,
        "SST_REDIS_PREFIX": "crash",
        "SST_SAMPLE_PAGES": 1000,
        "SST_HOLD_TIMEOUT": 600,
        "SST_WORKERS": "thread",
        "DOWNLOAD_DELAY": 0.2,
        "LOG_LEVEL": "INFO",
        **more,
    }
    cmd = [sys.executable, "-m", "scrapy", "crawl", "fleet", "-a", f"url={site_url}", "-a", f"grace={grace}"]
    cmd += ["-a", f"stats_out={workdir / f'stats-{name}.json'}", "-O", str(workdir / f"items-{name}.jsonl")]
    cmd += ["-a", f"parsed_out={workdir / f'parsed-{name}.txt'}"]
    for key, value in settings.items():
        cmd += ["-s", f"{key}={value}"]
    return cmd


def _fleet_run(
    tmp_path: Path, name: str, site_url: str, redis_url: str, grace: int = 45, **more
) -> tuple[subprocess.CompletedProcess, list, dict]:
    """A worker (``_fleet_cmd``) run to its end: its process, the items it delivered and
    its stats."""
    run = subprocess.run(
        _fleet_cmd(tmp_path, name, site_url, redis_url, grace=grace, **more),
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(),
        cwd=str(ROOT),
    )
    assert run.returncode == 0, run.stderr[-4000:]
    items = [json.loads(line) for line in (tmp_path / f"items-{name}.jsonl").read_text().splitlines() if line]
    return run, items, json.loads((tmp_path / f"stats-{name}.json").read_text())


def test_the_held_pages_of_a_killed_worker_are_crawled_again_and_delivered_once(demo_server, tmp_path):
    with RedisServer() as server:
        client = _fleet(server.url, "crash").client
        held_keys = lambda: list(client.scan_iter("crash:*:held:*"))  # noqa: E731
        doomed = subprocess.Popen(
            _fleet_cmd(tmp_path, "doomed", demo_server.url, server.url, grace=60),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=_env(),
            cwd=str(ROOT),
        )
        try:
            _wait_for(lambda: sum(client.hlen(k) for k in held_keys()) >= 5, timeout=120, what="held pages recorded")
        finally:
            doomed.send_signal(signal.SIGKILL)
            doomed.wait()
        # what the dead worker held: every one of these pages' items was lost with it (and
        # the pages whose callbacks were running, recorded too: they yield no item here)
        recorded = [json.loads(raw)["url"] for k in held_keys() for raw in client.hvals(k)]
        lost = sorted(u for u in recorded if "/article/" in u)
        assert len(lost) >= 5 and len(set(recorded)) == len(recorded)
        survivor, items, stats = _fleet_run(tmp_path, "survivor", demo_server.url, server.url)
        left = held_keys()
        client.close()
    urls = collections.Counter(item["url"] for item in items)
    assert max(urls.values()) == 1, [u for u, n in urls.items() if n > 1]  # delivered once
    assert set(lost) <= set(urls), sorted(set(lost) - set(urls))  # crawled again past the dupefilter
    assert all(item["text"] for item in items)  # and cleaned
    assert stats.get("sst/redis/pages_recovered") == len(recorded)
    assert "crawling them again here" in survivor.stderr
    assert not left  # the survivor closed cleanly: no record of it, none of the dead one


def test_items_killed_in_the_pipelines_are_crawled_again_and_delivered_once(demo_server, tmp_path):
    """The worker's sites have models, so its items are not held but go straight to the
    pipelines, where a storage that hangs keeps them; it is SIGKILLed. Every page it
    parsed was recorded in Redis before its callback ran and stays recorded until its
    items are through the pipelines, so a survivor crawls each again past the duplicate
    filter and delivers its items once: no page parsed and not delivered."""
    fast = {"SST_SAMPLE_PAGES": 3}  # models after a few pages: the later items are not held
    stall = {"ITEM_PIPELINES": json.dumps({"redis_fleet_runner.StallPipeline": 900}), **fast}
    with RedisServer() as server:
        client = _fleet(server.url, "crash").client
        parsed = tmp_path / "parsed-doomed.txt"
        doomed = subprocess.Popen(
            _fleet_cmd(tmp_path, "doomed", demo_server.url, server.url, grace=60, **stall),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=_env(),
            cwd=str(ROOT),
        )
        try:
            _wait_for(
                lambda: parsed.exists() and len(parsed.read_text().splitlines()) >= 8,
                timeout=180,
                what="the doomed worker to parse articles",
                alive=(doomed,),
            )
        finally:
            doomed.send_signal(signal.SIGKILL)
            doomed.wait()
        lost = set(parsed.read_text().splitlines())  # parsed, and not one delivered
        _run, items, stats = _fleet_run(tmp_path, "survivor", demo_server.url, server.url, **fast)
        left = list(client.scan_iter("crash:*:held:*"))
        client.close()
    assert len(lost) >= 8
    feed = tmp_path / "items-doomed.jsonl"
    assert not feed.exists() or not feed.read_text().strip()  # the stalled pipelines let none out
    urls = collections.Counter(item["url"] for item in items)
    assert max(urls.values()) == 1, [u for u, n in urls.items() if n > 1]
    assert lost <= set(urls), sorted(lost - set(urls))
    assert all(item["text"] for item in items)
    assert stats.get("sst/redis/pages_recovered", 0) >= len(lost)
    assert not left


def test_page_records_are_deleted_as_items_are_delivered_even_as_copies(demo_server, tmp_path):
    """A pipeline that gives back a copy of each item (so Scrapy's item_scraped carries
    another object than the spider yielded), held items among them: every page's record
    is deleted once its items are delivered, none is left to be crawled again."""
    settings = {"SST_SAMPLE_PAGES": 10, "ITEM_PIPELINES": json.dumps({"redis_fleet_runner.CopyPipeline": 900})}
    with RedisServer() as server:
        _run, items, stats = _fleet_run(tmp_path, "copies", demo_server.url, server.url, grace=1, **settings)
    urls = collections.Counter(item["url"] for item in items)
    assert set(urls) == set((tmp_path / "parsed-copies.txt").read_text().splitlines()) and max(urls.values()) == 1
    assert stats.get("sst/items_held", 0) > 0  # held ones too
    assert stats["sst/redis/held_recorded"] >= len(urls)
    assert stats.get("sst/redis/records_released") == stats["sst/redis/held_recorded"]
    assert not stats.get("sst/redis/items_not_followed")


# -- refinement reaches the fleet's models ----------------------------------------------------


def _site_worker(workdir: Path, tag: str, urls: list[str], redis_url: str, **settings) -> subprocess.Popen:
    """A `scrapy crawl fleet` worker over several sites (one per host), started on its own."""
    cmd = [sys.executable, "-m", "scrapy", "crawl", "fleet", "-a", "url=" + ",".join(urls), "-a", "workers=2"]
    cmd += ["-a", "grace=1", "-a", "quiet=2", "-a", f"stats_out={workdir / f'stats-{tag}.json'}"]
    cmd += [
        "-a",
        f"delivered_out={workdir / f'delivered-{tag}.txt'}",
        "-a",
        f"parsed_out={workdir / f'parsed-{tag}.txt'}",
    ]
    base = {
        "REDIS_URL": redis_url,
        "SST_METHOD": "default",
        "SST_SAMPLE_PAGES": 5,
        "SST_WORKERS": "thread",
        "DOWNLOAD_DELAY": 0.1,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "LOG_LEVEL": "INFO",
        **settings,
    }
    for key, value in base.items():
        cmd += ["-s", f"{key}={value}"]
    with open(workdir / f"log-{tag}.txt", "w", encoding="utf-8") as log:
        return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env=_env(), cwd=str(ROOT))


def _site_run(workdir: Path, tag: str, proc: subprocess.Popen) -> dict:
    proc.wait(timeout=240)
    log = (workdir / f"log-{tag}.txt").read_text()
    assert proc.returncode == 0, log[-4000:]
    read = lambda what: (workdir / f"{what}-{tag}.txt").read_text().splitlines()  # noqa: E731
    stats = json.loads((workdir / f"stats-{tag}.json").read_text())
    return {"stats": stats, "log": log, "parsed": read("parsed"), "delivered": read("delivered")}


@pytest.fixture
def three_sites():
    """Three generated demo sites, one per loopback host (a site per host, the default key)."""
    from sst_cleaner.tools.demo import DemoServer, DemoSite

    servers = [DemoServer(DemoSite(seed=40 + i, n_articles=8), host=f"127.0.0.{i + 1}").start() for i in range(3)]
    try:
        yield servers
    finally:
        for server in servers:
            server.close()


def test_every_page_a_fleet_crawls_after_the_sample_reaches_the_shared_model(three_sites, tmp_path):
    """Batches too small to complete (SST_REDIS_MERGE_PAGES far above what a worker sees
    of a site) and a timer that never fires: the pages still waiting when the crawl ends
    are merged at close, so each site's shared model holds every page the fleet crawled
    of it, once, as one process's refined model would."""
    urls = [s.url for s in three_sites]
    with RedisServer() as server:
        settings = {"SST_REDIS_PREFIX": "refine", "SST_REDIS_MERGE_PAGES": 1000, "SST_REDIS_MERGE_SECONDS": 600}
        procs = {tag: _site_worker(tmp_path, tag, urls, server.url, **settings) for tag in ("a", "b")}
        runs = [_site_run(tmp_path, tag, proc) for tag, proc in procs.items()]
        fleet = _fleet(server.url, "refine", "default", 5, "fleet", "sst_cleaner_examples")
        pages = {
            s.url: int(fleet.client.hget(fleet.key("127.0.0." + str(i + 1), "model"), "pages") or 0)
            for i, s in enumerate(three_sites)
        }
        fleet.close()
    delivered = collections.Counter(u for run in runs for u in run["delivered"])
    articles = {s.url.rstrip("/") + p for s in three_sites for p in s.site.article_paths}
    assert set(delivered) == articles and max(delivered.values()) == 1
    assert all(run["delivered"] for run in runs), "one worker crawled everything: nothing was shared"
    # each HTML page of a site crawled by either worker, in that site's shared model
    crawled = {
        s.url: len(s.site.article_paths) + 1 + sum(p.startswith("/section/") for p in s.site.paths) for s in three_sites
    }
    assert sum(run["stats"].get("sst/pages_seen", 0) for run in runs) == sum(crawled.values())
    assert pages == crawled, (pages, crawled)
    # what was not in a fit was merged (at close: no batch completed, the timer never fired)
    fitted = sum(
        int(n)
        for run in runs
        for n in re.findall(r"published the model of site \S+ for the fleet \(version 1, (\d+) pages", run["log"])
    )
    merged = sum(run["stats"].get("sst/redis/pages_merged", 0) for run in runs)
    assert merged == sum(crawled.values()) - fitted > 0, (merged, fitted)
    assert not any(run["stats"].get("sst/redis/pages_not_merged") for run in runs)


# -- Redis killed and restarted empty, under two workers --------------------------------------


def test_two_workers_share_again_after_redis_restarts_empty_and_build_each_site_once(demo_server, tmp_path):
    """Two crawl processes (each with its own queue, so every item is the process's to
    deliver) share models through a Redis that is killed mid-crawl and started again
    empty: both go local, both share again once it answers, the sites are then built
    once for both through the new Redis, and every item arrives exactly once."""
    with RedisServer() as server:
        fleet = _fleet(server.url, "heal2", sample_pages=30)
        settings = {
            "SST_MODEL_STORE": server.url,
            "SST_REDIS_PREFIX": "heal2",
            "SST_SITE_KEY": SECTIONS,
            # sites stay held until the end of the crawl, then are built through Redis
            "SST_SAMPLE_PAGES": 30,
            "SST_WORKERS": "thread",
            "DOWNLOAD_DELAY": 0.3,
            "SST_REDIS_TIMEOUT": 2.0,
        }
        crawls = [_start_crawl(tmp_path, name, url=demo_server.url, settings=settings) for name in ("h1", "h2")]
        procs = tuple(proc for proc, _ in crawls)
        logs = [tmp_path / f"log-{name}.txt" for name in ("h1", "h2")]
        try:
            _wait_for(lambda: fleet.client.exists(fleet.total_key), what="a page shared", alive=procs)
            server.proc.kill()  # no goodbye, no save: it comes back empty
            server.proc.wait()
            server.proc = None
            _wait_for(
                lambda: all("goes on with local models" in log.read_text() for log in logs),
                what="both crawls to go local",
                alive=procs,
            )
            server.start()
            restarted = time.monotonic()
            _wait_for(
                lambda: all("answers again" in log.read_text() for log in logs),
                timeout=60,
                what="both crawls to share again",
                alive=procs,
            )
            assert time.monotonic() - restarted < 30  # the backoff tops out at 8 s
            results = [_finish(proc, out) for proc, out in crawls]
            models = _models(fleet)
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
            fleet.close()
    for result in results:
        _exactly_once(result)
        assert sst_stat(result, "redis/down") == 1 and sst_stat(result, "redis/reconnects") == 1
        assert all(r["text"] for r in result["received"])
    # every site with a model was built once, by one of the two, through the new Redis;
    # the other loaded it (or, if it ended first, never needed it)
    assert set(models) == set(SITES), models
    assert all(version == "1" for version, _, _ in models.values()), models
    pids = {f":{proc.pid}" for proc in procs}
    assert all(builder[builder.rindex(":") :] in pids for _, builder, _ in models.values()), models
    assert sum(sst_stat(r, "models_built") for r in results) == len(SITES)
    assert sum(sst_stat(r, "redis/models_published") for r in results) == len(SITES)
    assert sum(sst_stat(r, "redis/models_loaded") for r in results) == len(SITES)
