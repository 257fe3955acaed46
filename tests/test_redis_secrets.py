"""A password in the Redis URL of SST_MODEL_STORE never reaches the log or an error
message: in the query (``?password=``), in the user info, percent-encoded, with the
redis://, rediss:// and unix:// schemes, whether Redis answers, refuses or is absent."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest
from conftest import TESTS, _env
from redis_server import RedisServer, free_port

from sst_cleaner.scrapy._fleet import SharedSiteModelStore
from sst_cleaner.scrapy._settings import load_config, store_url

SECRET = "Hunter2Secret"
PAGE = b"<html><body><p>" + b"word " * 200 + b"</p></body></html>"


def _store(url: str) -> SharedSiteModelStore:
    settings = {"SST_MODEL_STORE": url, "SST_REDIS_TIMEOUT": 0.3, "SST_WORKERS": "thread", "SST_REDIS_PREFIX": "pw"}
    return SharedSiteModelStore(load_config(settings), settings=settings)


def _use(store: SharedSiteModelStore) -> None:
    """Open the store (it logs where Redis is) and make one Redis call; a failure goes
    where every failing call of a crawl goes (the warning that the crawl goes local)."""
    store.open()
    try:
        store.fleet.push_page("site", "http://site/a", PAGE, None, 5)
    except Exception as exc:
        store.link.failed(exc)  # no public way to fail one call outside a running crawl
    finally:
        store.close()


@pytest.fixture
def log_of(caplog):
    """``log_of(store)``: what using ``store`` (see :func:`_use`) logs, and only that."""

    def run(store: SharedSiteModelStore) -> str:
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="sst_cleaner"):
            _use(store)
        return caplog.text

    return run


def _crawl(demo_server, tmp_path, settings: dict) -> tuple[subprocess.CompletedProcess, dict]:
    """A crawl of the demo site with the add-on and ``settings``, in a process of its
    own (tests/redis_fleet_runner.py): the process and its output (items and stats)."""
    out, cfg = tmp_path / "out.json", tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"url": demo_server.url, "out": str(out), "kinds": ["dict"], "settings": settings}))
    proc = subprocess.run(
        [sys.executable, os.path.join(TESTS, "redis_fleet_runner.py"), str(cfg)],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=str(tmp_path),
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, json.loads(out.read_text(encoding="utf-8"))


def _forms(host_port: str, socket_path: str) -> list[str]:
    return [
        f"redis://{host_port}/0?password={SECRET}",
        f"redis://{host_port}/0?db=0&password={SECRET}&client_name=w1",
        f"redis://:{SECRET}@{host_port}/0",
        f"redis://default:{SECRET}@{host_port}/0",
        f"redis://default:%{ord(SECRET[0]):X}{SECRET[1:]}@{host_port}/0",  # percent-encoded
        f"rediss://default:{SECRET}@{host_port}/0",
        f"rediss://{host_port}/0?password={SECRET}",
        f"unix://{socket_path}?password={SECRET}",
        f"unix://:{SECRET}@{socket_path}?db=0",
    ]


def _assert_no_secret(text: str) -> None:
    for secret in (SECRET, f"%{ord(SECRET[0]):X}{SECRET[1:]}", SECRET[1:]):
        assert secret not in text
    assert "***" in text


@pytest.mark.parametrize("url", _forms(f"127.0.0.1:{free_port()}", "/nonexistent/sst-redis.sock"))
def test_no_password_is_logged_when_redis_is_unreachable(url, log_of):
    text = log_of(_store(url))
    assert "shared through Redis at" in text
    assert "goes on with local models" in text
    _assert_no_secret(text)


def test_no_password_is_logged_when_redis_answers_or_refuses(log_of, tmp_path):
    sock = str(tmp_path / "r.sock")
    with RedisServer(args=("--requirepass", SECRET, "--unixsocket", sock, "--unixsocketperm", "700")) as server:
        for url in _forms(f"127.0.0.1:{server.port}", sock):
            if url.startswith("rediss://"):
                continue  # this server speaks no TLS: its failure is the unreachable case
            text = log_of(_store(url))
            assert "shared through Redis at" in text
            assert "goes on with local models" not in text, url  # the password was right
            _assert_no_secret(text)
            # the same URL with a wrong password: refused, and logged without it
            wrong = url.replace(SECRET[-6:], "Nope", 1)
            text = log_of(_store(wrong))
            assert "goes on with local models" in text, wrong
            assert "Nope" not in text
            _assert_no_secret(text)


@pytest.mark.parametrize(
    "url",
    [
        f"http://user:{SECRET}@h:6379/0",  # not a Redis scheme: refused by the settings
        f"redis://:{SECRET}",  # a password without its @: read as a port
        f"redis://:{SECRET[:4]}?{SECRET[4:]}@h:6379/0",  # a ? in the password, unencoded
    ],
)
def test_no_password_is_in_the_error_for_a_url_redis_refuses(url):
    with pytest.raises(ValueError) as info:
        store_url({"SST_MODEL_STORE": url})
        _store(url)
    _assert_no_secret(str(info.value))
    assert SECRET[:4] not in str(info.value) and SECRET[4:] not in str(info.value)


def test_no_password_reaches_the_log_of_a_crawl(demo_server, tmp_path):
    port = free_port()  # nothing listens there: the crawl goes local and says so
    url = f"redis://default:{SECRET}@127.0.0.1:{port}/0?password={SECRET}"
    settings = {"SST_MODEL_STORE": url, "SST_REDIS_TIMEOUT": 0.3, "SST_SAMPLE_PAGES": 3, "SST_WORKERS": "thread"}
    proc, result = _crawl(demo_server, tmp_path, settings)
    assert "goes on with local models" in proc.stderr
    _assert_no_secret(proc.stderr + proc.stdout + json.dumps(result))


# -- scrapy-redis's connection settings ---------------------------------------------------


def test_redis_host_port_and_params_reach_the_server_and_db_scrapy_redis_uses(demo_server, tmp_path):
    """``SST_MODEL_STORE = "redis"`` with scrapy-redis's REDIS_HOST, REDIS_PORT and
    REDIS_PARAMS (a password and db 3): the crawl's models land where scrapy-redis's own
    client looks, and the password is in no log line."""
    from scrapy.settings import Settings
    from scrapy_redis.connection import get_redis_from_settings

    with RedisServer(args=("--requirepass", SECRET)) as server:
        redis_settings = {
            "REDIS_HOST": "127.0.0.1",
            "REDIS_PORT": server.port,
            "REDIS_PARAMS": {"password": SECRET, "db": 3},
        }
        settings = dict(
            redis_settings,
            SST_MODEL_STORE="redis",
            SST_REDIS_PREFIX="conn",
            SST_SAMPLE_PAGES=3,
            SST_WORKERS="thread",
            SST_REDIS_TIMEOUT=2,
        )
        proc, result = _crawl(demo_server, tmp_path, settings)
        assert "goes on with local models" not in proc.stderr, proc.stderr[-3000:]
        scrapy_redis = get_redis_from_settings(Settings(redis_settings))
        models = [k for k in scrapy_redis.scan_iter("conn:*") if k.endswith(b":model")]
        assert models, "no model reached scrapy-redis's server and db"
        other_db = get_redis_from_settings(Settings(dict(redis_settings, REDIS_PARAMS={"password": SECRET})))
        assert not list(other_db.scan_iter("conn:*"))  # db 0 holds none of them
        assert result["stats"].get("sst/redis/models_published", 0) >= 1
        assert "redis://127.0.0.1:%d/3" % server.port in proc.stderr  # where it is, said in the log
    assert SECRET not in proc.stderr + proc.stdout


def test_a_wrong_password_in_redis_params_is_not_logged(log_of):
    with RedisServer(args=("--requirepass", SECRET)) as server:
        settings = {
            "SST_MODEL_STORE": "redis",
            "REDIS_URL": f"redis://127.0.0.1:{server.port}/2",
            "REDIS_PARAMS": {"password": "WrongPassword99"},
            "SST_REDIS_TIMEOUT": 0.5,
            "SST_WORKERS": "thread",
        }
        store = SharedSiteModelStore(load_config(settings), settings=settings)
        assert "WrongPassword99" not in repr(store.redis_config)
        text = log_of(store)
    assert "goes on with local models" in text
    assert "WrongPassword99" not in text
