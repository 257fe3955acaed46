"""The Redis side of the shared model store (sst_cleaner/redis_store.py) against a real
redis-server (tests/redis_server.py): bounded samples, the build lock, publishing, and
untrusted values. Crawls with it are in tests/test_redis_fleet.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zlib

import pytest

from sst_cleaner.engine._cleaner import SiteCleaner
from sst_cleaner.engine._model_io import ModelFormatError
from sst_cleaner.scrapy._redis_store import RedisFleet, decode_page, encode_page, parse_model_json, site_hash
from sst_cleaner.scrapy._settings import RedisConfig, load_redis_config, store_url

PAGE = b"<html><body><p>" + b"word " * 200 + b"</p></body></html>"


@pytest.fixture
def fleet(redis_server, request):
    """A RedisFleet on a fresh prefix (tests share one server)."""

    def make(**kw) -> RedisFleet:
        cfg = dict(url=redis_server.url, prefix="t-" + request.node.name[:40], lock_ttl=1.0)
        cfg.update(kw)
        return RedisFleet(RedisConfig(**cfg))

    made = [make()]
    made[0].make = make
    yield made[0]
    client = made[0].client
    for key in client.scan_iter(made[0].config.prefix + ":*"):
        client.delete(key)
    made[0].close()


def test_settings_name_the_store():
    assert store_url({}) is None
    assert store_url({"SST_MODEL_STORE": "redis://h:1/2"}) == "redis://h:1/2"
    # "redis" reuses scrapy-redis's REDIS_URL
    assert store_url({"SST_MODEL_STORE": "redis", "REDIS_URL": "redis://q:7/0"}) == "redis://q:7/0"
    assert store_url({"SST_MODEL_STORE": "redis"}) == "redis://localhost:6379/0"
    with pytest.raises(ValueError):
        store_url({"SST_MODEL_STORE": "http://nope"})
    cfg = load_redis_config({"SST_MODEL_STORE": "redis", "SST_REDIS_LOCK_TTL": "5"})
    assert cfg.lock_ttl == 5.0 and cfg.prefix == "sst"
    with pytest.raises(ValueError):
        load_redis_config({"SST_MODEL_STORE": "redis", "SST_REDIS_PREFIX": "a{b}"})
    # the namespace: the project and the spider by default, as a safe key part
    assert load_redis_config({"SST_MODEL_STORE": "redis", "BOT_NAME": "news"}, "blog").namespace == "news:blog"
    odd = load_redis_config({"SST_MODEL_STORE": "redis", "SST_REDIS_NAMESPACE": "x-%(spider)s"}, "a {b}\n")
    assert odd.namespace == "x-a__b__"
    with pytest.raises(ValueError, match="SST_REDIS_NAMESPACE"):
        load_redis_config({"SST_MODEL_STORE": "redis", "SST_REDIS_NAMESPACE": "%(host)s"})


def test_keys_hold_a_hash_of_the_site_never_the_host(fleet):
    host = "evil.example\r\nFLUSHALL {x} *"
    fleet.push_page(host, "http://evil.example/a", PAGE, "utf-8", 5)
    keys = [k.decode() for k in fleet.client.scan_iter(fleet.config.prefix + ":*")]
    assert keys and all("evil" not in k and "\n" not in k for k in keys)
    assert any(site_hash(host) in k for k in keys)


def test_sample_fills_once_per_page_and_says_when_it_is_complete(fleet):
    results = [fleet.push_page("s", f"http://s/{i}", PAGE, None, 3) for i in range(3)]
    assert results == [("added", 1), ("added", 2), ("filled", 3)]
    assert fleet.push_page("s", "http://s/9", PAGE, None, 3) == ("full", 3)
    assert fleet.push_page("t", "http://t/0", PAGE, None, 3) == ("added", 1)
    assert fleet.push_page("t", "http://t/0", PAGE, None, 3) == ("dup", 1)  # one copy per page
    pages = fleet.read_sample("s", 10)
    assert [p[0] for p in pages] == ["http://s/0", "http://s/1", "http://s/2"]
    assert pages[0][1] == PAGE
    # every sample key expires (SST_REDIS_SAMPLE_TTL)
    for what in ("sample", "urls", "bytes"):
        assert 0 < fleet.client.pttl(fleet.key("s", what)) <= fleet.config.sample_ttl * 1000
    assert fleet.client.pttl(fleet.total_key) > 0


def test_sample_bytes_are_capped_per_site_and_in_total(fleet):
    one = len(PAGE)  # the caps count page bytes (what a reader inflates), not compressed ones
    small = fleet.make(site_sample_bytes=2 * one + 10, total_sample_bytes=3 * one + 10)
    assert small.push_page("a", "http://a/0", PAGE, None, 10)[0] == "added"
    assert small.push_page("a", "http://a/1", PAGE, None, 10)[0] == "added"
    assert small.push_page("a", "http://a/2", PAGE, None, 10) == ("capped", 2)
    assert small.push_page("b", "http://b/0", PAGE, None, 10)[0] == "added"
    assert small.push_page("b", "http://b/1", PAGE, None, 10) == ("total", 1)
    assert int(small.client.get(small.total_key)) == 3 * one


def test_one_builder_at_a_time_and_a_dead_builders_lock_expires(fleet):
    assert fleet.claim("s", "A") == ("lock", "")
    state, ttl = fleet.claim("s", "B")
    assert state == "busy" and 0 < int(ttl) <= 1000
    assert fleet.renew("s", "A") and not fleet.renew("s", "B")
    time.sleep(1.2)  # A died: nobody renews its lock (lock_ttl 1 s)
    assert fleet.claim("s", "B") == ("lock", "")
    # A wakes up: its publish is refused, B's is the model
    assert fleet.publish("s", "A", b"{}", 1, "A") == 0
    assert fleet.publish("s", "B", b'{"m": 1}', 5, "B") == 1
    assert fleet.claim("s", "C") == ("model", "1")
    raw, version = fleet.read_model("s")
    assert raw == b'{"m": 1}' and version == "1"
    assert fleet.client.hget(fleet.key("s", "model"), "builder") == b"B"
    assert 0 < fleet.client.pttl(fleet.key("s", "model")) <= fleet.config.model_ttl * 1000
    assert not fleet.client.exists(fleet.key("s", "lock"))


def test_publishing_drops_the_sample_and_its_bytes(fleet):
    for i in range(2):
        fleet.push_page("a", f"http://a/{i}", PAGE, None, 5)
    fleet.push_page("b", "http://b/0", PAGE, None, 5)
    b_bytes = int(fleet.client.get(fleet.key("b", "bytes")))
    assert fleet.claim("a", "T")[0] == "lock"
    assert fleet.publish("a", "T", b"{}", 2, "w") == 1
    for what in ("sample", "urls", "bytes", "lock"):
        assert not fleet.client.exists(fleet.key("a", what))
    assert int(fleet.client.get(fleet.total_key)) == b_bytes
    assert fleet.push_page("a", "http://a/9", PAGE, None, 5) == ("model", 0)


def test_untrusted_values_are_refused(fleet):
    # a model key of another type, or too big, is refused before its value is fetched
    fleet.client.set(fleet.key("s", "model"), b"\x80\x04pickle")
    assert fleet.claim("s", "T") == ("model", "")
    with pytest.raises(ModelFormatError, match="string"):
        fleet.read_model("s")
    assert fleet.drop_model("s", "")
    tiny = fleet.make(max_model_bytes=10)
    tiny.client.hset(tiny.key("s", "model"), mapping={"json": b"x" * 11, "version": 1})
    with pytest.raises(ModelFormatError, match="over"):
        tiny.read_model("s")
    # a version that changed since it was read is not dropped
    assert not fleet.drop_model("s", "7") and fleet.client.exists(fleet.key("s", "model"))
    for bad in (b'{"a": NaN}', b"[1]", b"\xff", b"[" * 100000, b'{"format": "x"}'):
        with pytest.raises(ModelFormatError):
            data = parse_model_json(bad, 10**6)
            SiteCleaner.from_dict(data)
    good = SiteCleaner("cetd").to_dict()
    assert SiteCleaner.from_dict(parse_model_json(json.dumps(good).encode(), 10**6)).method == "cetd"


def test_sample_pages_are_checked_when_read(fleet):
    assert decode_page(encode_page("http://a/", b"<p>x</p>", "utf-8"), 100) == ("http://a/", b"<p>x</p>", "utf-8")
    bomb = zlib.compress(b'{"u": "http://a/", "e": null}\n' + b"\0" * 10_000_000)
    with pytest.raises(ValueError, match="cap"):
        decode_page(bomb, 1000)
    for raw in (zlib.compress(b"no header"), zlib.compress(b'{"u": 5}\nbody'), b"not zlib"):
        with pytest.raises((ValueError, zlib.error)):
            decode_page(raw, 1000)
    fleet.push_page("s", "http://s/0", PAGE, None, 5)
    fleet.client.rpush(fleet.key("s", "sample"), b"garbage")
    assert [p[0] for p in fleet.read_sample("s", 5)] == ["http://s/0"]


def _sent(fleet) -> int:
    """Bytes the server has sent to its clients so far (INFO stats)."""
    return int(fleet.client.info("stats")["total_net_output_bytes"])


def test_a_planted_long_version_is_refused_before_it_is_fetched(fleet):
    key = fleet.key("s", "model")
    good = json.dumps(SiteCleaner("cetd").to_dict()).encode()
    fleet.client.hset(key, mapping={"json": good, "version": b"9" * 8_000_000})
    before = _sent(fleet)
    assert fleet.claim("s", "T") == ("model", "")
    with pytest.raises(ModelFormatError, match="version"):
        fleet.read_model("s")
    assert _sent(fleet) - before < 100_000  # neither call brought the 8 MB value over
    assert fleet.drop_model("s", "") and not fleet.client.exists(key)
    # a builder publishing over such a value starts the counter again
    fleet.client.hset(key, mapping={"json": good, "version": b"9" * 1000})
    fleet.client.delete(key)
    assert fleet.claim("s", "T") == ("lock", "")
    fleet.client.hset(key, mapping={"json": good, "version": b"9" * 1000})
    assert fleet.publish("s", "T", good, 3, "w") == 1


def test_a_planted_big_model_is_refused_before_it_is_fetched(fleet):
    small = fleet.make(max_model_bytes=1_000_000)
    small.client.hset(small.key("s", "model"), mapping={"json": b"x" * 8_000_000, "version": 1})
    before = _sent(fleet)
    with pytest.raises(ModelFormatError, match="over the 1000000 limit"):
        small.read_model("s")
    assert _sent(fleet) - before < 100_000


def test_a_planted_sample_is_capped_inflated_and_on_the_wire(fleet):
    cap = 1_500_000
    small = fleet.make(site_sample_bytes=cap)
    key = small.key("s", "sample")
    # zlib bombs under the per-entry cap each: 20 of them would inflate to 20 MB
    bomb = encode_page("http://s/bomb", b"\0" * 1_000_000, None)
    small.client.rpush(key, *[bomb] * 20)
    pages = small.read_sample("s", 20)
    assert sum(len(body) for _, body, _ in pages) <= cap
    assert len(pages) == 1  # the first fits, the rest would take the sample past its cap
    # entries whose stored bytes alone are past the cap are never sent
    small.client.delete(key)
    noise = encode_page("http://s/noise", os.urandom(600_000), None)
    small.client.rpush(key, *[noise] * 10)
    before = _sent(fleet)
    pages = small.read_sample("s", 20)
    assert len(pages) == 2 and _sent(fleet) - before < cap + 100_000
    # an honest sample still reads whole
    small.client.delete(key)
    for i in range(5):
        small.push_page("t", f"http://t/{i}", PAGE, None, 5)
    assert [p[1] for p in small.read_sample("t", 5)] == [PAGE] * 5


def test_a_sample_key_of_another_type_is_an_empty_sample(fleet):
    fleet.client.set(fleet.key("s", "sample"), b"x" * 1000)
    assert fleet.read_sample("s", 5) == []


def test_without_a_model_store_nothing_imports_redis(tmp_path):
    """A crawl with the add-on (middleware and pipeline) but without SST_MODEL_STORE never
    imports the redis client."""
    code = """
import sys
import scrapy
from scrapy.crawler import CrawlerProcess

class S(scrapy.Spider):
    name = "s"
    async def start(self):
        yield scrapy.Request("data:text/html,<html><body><p>Hello there, reader.</p></body></html>")
    def parse(self, response):
        yield {"url": response.url}

process = CrawlerProcess({"ADDONS": {"sst_cleaner.Addon": 0}, "SST_WORKERS": "thread",
                          "LOG_LEVEL": "WARNING", "TELNETCONSOLE_ENABLED": False})
crawler = process.create_crawler(S)
process.crawl(crawler)
process.start()
store = crawler._sst_store
print(type(store).__name__, crawler.stats.get_value("item_scraped_count"))
print(sorted(m for m in sys.modules if m == "redis" or m.startswith(("redis.", "scrapy_redis"))))
"""
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(__file__)), os.environ.get("PYTHONPATH", "")]),
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=120
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    assert lines[-2] == "SiteModelStore 1"
    assert lines[-1] == "[]"


def test_a_merged_delta_is_the_model_of_all_the_pages_and_writes_are_compare_and_set(fleet):
    from sst_cleaner.scrapy._fleet_refine import fit_delta, merge_into
    from sst_cleaner.tools.demo import DemoSite

    site = DemoSite(seed=3, n_articles=12)
    pages = [("http://demo" + p, site.page(p).encode("utf-8"), "utf-8") for p in site.article_paths]
    base = SiteCleaner().fit(pages[:5])
    fleet.client.hset(fleet.key("s", "model"), mapping={"json": json.dumps(base.to_dict()), "version": 1})
    raw, version = fleet.read_model("s")
    merged, data, blob = merge_into(raw, 10**8, fit_delta("default", {}, pages[5:9]), max_pages=200)
    whole = SiteCleaner().fit(pages[:9])
    assert merged.n_pages == whole.n_pages == 9
    for url, body, enc in pages[9:]:
        assert merged.clean(body, url=url).text == whole.clean(body, url=url).text
    assert merge_into(raw, 10**8, fit_delta("default", {}, pages[5:6]), max_pages=5) is None  # full
    # two workers merged into version 1: the first write wins, the second must merge again
    assert fleet.replace_model("s", version, blob, merged.n_pages, "w1") == 2
    assert fleet.replace_model("s", version, blob, merged.n_pages, "w2") == 0
    assert fleet.client.hget(fleet.key("s", "model"), "builder") == b"w1"


def test_held_page_records_are_json_and_read_back_as_untrusted():
    import scrapy

    from sst_cleaner.scrapy._fleet_held import RECOVERED_META, decode_request, encode_request

    class Spider(scrapy.Spider):
        name = "s"

        def parse_item(self, response):
            pass

        def _secret(self, response):
            pass

    spider = Spider()
    request = scrapy.Request(
        "http://a/x", callback=spider.parse_item, method="POST", body=b"\xff\x00", meta={"depth": 2, "obj": object()}
    )
    raw = encode_request(request, spider)
    assert raw is not None and b"pickle" not in raw
    again = decode_request(raw, spider)
    assert (again.url, again.method, again.body, again.callback) == (
        "http://a/x",
        "POST",
        b"\xff\x00",
        spider.parse_item,
    )
    assert again.dont_filter and again.meta["depth"] == 2 and again.meta[RECOVERED_META]
    assert "obj" not in again.meta  # only what JSON carries
    # a planted record: a class path is never imported, a private method never called
    planted = json.loads(raw)
    planted["_class"] = "os.system"
    assert type(decode_request(json.dumps(planted).encode(), spider)) is scrapy.Request
    planted["callback"] = "_secret"
    with pytest.raises(ValueError, match="not a method"):
        decode_request(json.dumps(planted).encode(), spider)
    for bad in (b"\x80\x04pickle", b"[]", b"{}", b"x" * (64 * 1024 + 1)):
        with pytest.raises(ValueError):
            decode_request(bad, spider)
    assert encode_request(scrapy.Request("http://a/" + "x" * 70_000), spider) is None  # over the cap
