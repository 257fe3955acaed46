"""Fixtures of the Scrapy integration tests: a local demo server and a crawl runner."""
from __future__ import annotations

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
    from sst_cleaner.demo import DemoServer, DemoSite

    with DemoServer(DemoSite(seed=11, n_articles=30)) as server:
        yield server


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(TESTS), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


@pytest.fixture
def run_crawl(tmp_path):
    """``run_crawl(url=..., settings={...}, kinds=[...], ...) -> result dict``: one real
    Scrapy crawl in a fresh process (see tests/test_scrapy_runner.py)."""
    counter = [0]

    def run(timeout: float = 120, **cfg):
        counter[0] += 1
        out = tmp_path / f"crawl-{counter[0]}.json"
        cfg["out"] = str(out)
        cfg_path = tmp_path / f"config-{counter[0]}.json"
        cfg_path.write_text(json.dumps(cfg), encoding="utf-8")
        proc = subprocess.run([sys.executable, str(TESTS / "test_scrapy_runner.py"), str(cfg_path)],
                              capture_output=True, text=True, timeout=timeout, env=_env(), cwd=str(tmp_path))
        assert proc.returncode == 0 and out.exists(), proc.stderr[-4000:]
        result = json.loads(out.read_text(encoding="utf-8"))
        result["log"] = proc.stderr
        return result

    return run
