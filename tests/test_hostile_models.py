"""Hostile model files: every read is bounded and checked, a model the crawl cannot use is
a logged, counted rebuild, and models read from files run with the crawl's parameters."""

from __future__ import annotations

import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import assert_exactly_once, crawl_in_subprocess, sst_stat
from story_pages import STORY_PAGES
from test_model_compact import version_1

from sst_cleaner import ModelFormatError, SiteCleaner
from sst_cleaner.engine import _model_io as model_io
from sst_cleaner.engine.methods.sitestats import hybrid
from sst_cleaner.scrapy._model_files import model_filename
from sst_cleaner.scrapy._settings import SSTConfig
from sst_cleaner.scrapy._site_models import SiteModelStore

PAGES = STORY_PAGES


@pytest.fixture(scope="module")
def model_data():
    return SiteCleaner().fit(PAGES).to_dict()


@pytest.fixture(scope="module")
def model_data_v1():
    return version_1(SiteCleaner().fit(PAGES))


def _write(tmp_path, data) -> str:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def _load_within(path, seconds: float = 10.0):
    """SiteCleaner.load in a thread: a load that hangs fails the test instead of the run."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(SiteCleaner.load, path).result(timeout=seconds)


# -- what may be opened ---------------------------------------------------------------------


def test_a_symlink_to_dev_zero_is_refused(tmp_path):
    path = tmp_path / "m.json"
    os.symlink("/dev/zero", path)
    with pytest.raises(ModelFormatError, match="open"):
        _load_within(path)


def test_a_symlink_to_a_good_model_is_refused(tmp_path, model_data):
    target = _write(tmp_path, model_data)
    link = tmp_path / "link.json"
    os.symlink(target, link)
    with pytest.raises(ModelFormatError):
        _load_within(link)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_hanging(tmp_path):
    path = tmp_path / "m.json"
    os.mkfifo(path)
    with pytest.raises(ModelFormatError, match="regular"):
        _load_within(path)


def test_a_directory_is_refused(tmp_path):
    path = tmp_path / "m.json"
    path.mkdir()
    with pytest.raises(ModelFormatError):
        _load_within(path)


def test_a_file_past_the_cap_is_refused_while_reading(tmp_path, monkeypatch, model_data):
    path = _write(tmp_path, model_data)
    monkeypatch.setattr(model_io, "MAX_MODEL_BYTES", os.path.getsize(path) - 1)
    with pytest.raises(ModelFormatError, match="limit"):
        SiteCleaner.load(path)


# -- what a model may hold ------------------------------------------------------------------


def test_nan_threshold_is_refused(tmp_path, model_data):
    for bad in ("nan", "NaN", "inf", "-Infinity", 7.5, "2"):
        data = dict(model_data, params={"threshold": bad})
        with pytest.raises(ModelFormatError):
            SiteCleaner.load(_write(tmp_path, data))


def test_a_scorer_path_in_a_model_is_refused(tmp_path, model_data):
    # True and 1 would be open(1): the process's stdout, closed after reading
    for path in ("/etc/passwd", "../../x.json", "scorer.json", "a.b.c", "default_scorer", True, 1, 0):
        data = dict(model_data, params={"scorer": path})
        with pytest.raises(ModelFormatError, match="path"):
            SiteCleaner.load(_write(tmp_path, data))


def test_a_scorer_path_is_not_saved(tmp_path):
    scorer = os.path.join(os.path.dirname(hybrid.__file__), "data", "default_scorer.json")
    cleaner = SiteCleaner(scorer=scorer).fit(PAGES)
    assert "scorer" not in cleaner.to_dict()["params"]
    path = tmp_path / "m.json"
    cleaner.save(path)
    assert SiteCleaner.load(path).clean(PAGES[0]).text == cleaner.clean(PAGES[0]).text


def test_limits_in_a_model_file_are_refused(tmp_path, model_data):
    data = dict(model_data, params={"max_tags": 10})
    with pytest.raises(ModelFormatError, match="limit"):
        SiteCleaner.load(_write(tmp_path, data))


@pytest.mark.parametrize("where", ["top", "state", "site_stats"])
def test_unknown_keys_are_refused(tmp_path, model_data, where):
    data = json.loads(json.dumps(model_data))
    junk = {f"k{i}": {} for i in range(1000)}
    if where == "top":
        data["junk"] = junk
    elif where == "state":
        data["model"]["junk"] = junk
    else:
        data["model"]["site_stats"]["junk"] = junk
    with pytest.raises(ModelFormatError, match="keys"):
        SiteCleaner.load(_write(tmp_path, data))


@pytest.mark.parametrize(
    "field, value",
    [
        ("n_pages", -1),
        ("n_pages", 10**40),
        ("page_fps", {"x": 99}),
        ("sent_df", {"h": 999}),
        ("sent_df", {"h": 0}),
        ("node_df", {"k": -3}),
        ("sent_len", {"h": -1}),
        ("node_sent", {"k": {"h": 50}}),
        ("node_feat", {"k": {"f": [1.0]}}),
        ("node_feat", {"k": {"f": [-1.0, 0.0]}}),
        ("node_feat", {"k": {"f": ["1", 0]}}),
    ],
)
def test_inconsistent_counts_are_refused(tmp_path, model_data_v1, field, value):
    # the tables of format version 1, which still loads (test_model_compact: version 2's)
    data = json.loads(json.dumps(model_data_v1))
    assert SiteCleaner.load(_write(tmp_path, data)).n_pages == len(PAGES)
    data["model"]["site_stats"][field] = value
    with pytest.raises(ModelFormatError):
        SiteCleaner.load(_write(tmp_path, data))


def test_deep_or_long_state_is_refused(tmp_path, model_data):
    deep: dict = {}
    node = deep
    for _ in range(40):
        node["a"] = {}
        node = node["a"]
    for state in ({"site_stats": deep}, {"x" * 10_000: 1}):
        data = dict(model_data, model=state)
        with pytest.raises(ModelFormatError):
            SiteCleaner.load(_write(tmp_path, data))


def test_a_good_model_still_loads_the_same(tmp_path):
    cleaner = SiteCleaner().fit(PAGES)
    path = tmp_path / "m.json"
    cleaner.save(path)
    assert SiteCleaner.load(path).clean(PAGES[1]).text == cleaner.clean(PAGES[1]).text


# -- the crawl's parameters apply to loaded models ------------------------------------------


def test_loaded_models_get_the_configured_limits(tmp_path):
    SiteCleaner().fit(PAGES).save(tmp_path / model_filename("example.com"))
    assert SiteCleaner.load(tmp_path / model_filename("example.com")).limits.max_tags != 20
    store = SiteModelStore(
        SSTConfig(params={"max_tags": 20, "threshold": 0.4}, model_dir=str(tmp_path), workers="thread")
    )
    model, data, path, why = store.files.read("example.com")
    assert why is None and model.limits.max_tags == 20 and model.params["threshold"] == 0.4


def test_worker_models_get_the_configured_limits(model_data):
    from sst_cleaner.scrapy import _workers as workers
    from sst_cleaner.scrapy._model_cache import ModelCache

    saved = dict(workers._W)
    try:
        models = ModelCache(0, None, SiteCleaner.load)  # what a worker keeps with SST_MAX_MODELS = 0
        workers._W.update(method="default", params={"max_tags": 20}, models=models, fallback=None)
        workers._op_put("s", model_data)
        assert models.get("s").limits.max_tags == 20
    finally:
        workers._W.clear()
        workers._W.update(saved)


def test_store_read_never_raises(tmp_path):
    os.mkdir(tmp_path / model_filename("example.com"))
    store = SiteModelStore(SSTConfig(model_dir=str(tmp_path), workers="thread"))
    model, data, path, why = store.files.read("example.com")
    assert model is None and why is not None
    assert threading.active_count() >= 1  # nothing left behind to wait for


# -- real crawls ------------------------------------------------------------------------------


def _dir_at_model_path(workdir, url: str) -> dict:
    models = workdir / "models-dir"
    (models / model_filename("127.0.0.1")).mkdir(parents=True)
    return crawl_in_subprocess(
        workdir,
        "dir-at-model-path",
        url=url,
        max_pages=10,
        settings={"SST_MODEL_DIR": str(models), "SST_SAMPLE_PAGES": 5},
    )


def _limits_pair(workdir, url: str) -> tuple:
    settings = {
        "SST_MODEL_DIR": str(workdir / "models-limits"),
        "SST_SAMPLE_PAGES": 5,
        "SST_METHOD": "default",
        "SST_PARAMS": {"max_tags": 20},
    }
    first = crawl_in_subprocess(workdir, "limits-1", url=url, kinds=["status"], max_pages=8, settings=settings)
    second = crawl_in_subprocess(workdir, "limits-2", url=url, kinds=["status"], max_pages=8, settings=settings)
    return first, second


@pytest.fixture(scope="module")
def crawls(demo_server, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("hostile-models")
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {
            "dir": pool.submit(_dir_at_model_path, workdir, demo_server.url),
            "limits": pool.submit(_limits_pair, workdir, demo_server.url),
        }
        yield futures


def test_a_directory_at_the_model_path_loses_nothing(crawls):
    result = crawls["dir"].result()
    assert_exactly_once(result["yielded"], (r["id"] for r in result["received"]))
    assert result["stats"]["finish_reason"] == "finished"
    assert result["stats"].get("response_received_count", 0) >= 10
    assert sst_stat(result, "models_rejected") == 1
    assert sst_stat(result, "models_built") == 1
    assert "ignoring unusable model file" in result["log"]
    assert all(r["text"] for r in result["received"])


def test_a_second_crawl_keeps_the_configured_limits(crawls):
    first, second = crawls["limits"].result()
    for result in (first, second):
        assert_exactly_once(result["yielded"], (r["id"] for r in result["received"]))
        assert {r["status"] for r in result["received"]} == {"truncated"}
    assert sst_stat(second, "models_loaded") == 1
