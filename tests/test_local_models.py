"""The Scrapy process's local model copies (sst_cleaner/scrapy/_local_models.py): at most
SST_MAX_MODELS in memory, the least recently used written out (by a background thread,
holding the site's lock) and read back on demand. The crawls are in test_model_cache.py."""

from __future__ import annotations

import threading
from concurrent.futures import Future

from story_pages import STORY_PAGES
from twisted.internet.defer import Deferred

from sst_cleaner import SiteCleaner
from sst_cleaner.scrapy._dispatch import Dispatcher
from sst_cleaner.scrapy._item_pages import PageRecord
from sst_cleaner.scrapy._local_models import LocalModels
from sst_cleaner.scrapy._settings import SSTConfig
from sst_cleaner.scrapy._site_models import SiteModelStore

PAGES = STORY_PAGES


def _models(folder, max_models: int = 1) -> tuple[LocalModels, dict]:
    locks: dict = {}
    models = LocalModels(max_models, str(folder), SiteCleaner.load, lambda s: locks.setdefault(s, threading.Lock()))
    return models, locks


def _fitted(n: int) -> SiteCleaner:
    return SiteCleaner().fit(PAGES[:n])


def test_the_least_recently_used_go_to_disk_and_come_back(tmp_path):
    models, _ = _models(tmp_path, max_models=2)
    a, b, c = _fitted(2), _fitted(3), _fitted(4)
    models.put("a", a)
    models.put("b", b)
    assert models.get("a") is a  # "a" used last: "b" goes first
    models.put("c", c)
    models.flush()
    assert len(models) == models.in_memory == 2 and "b" in models and models.n_pages("b") == 3
    back = models.get("b")  # read back from its file; "a" makes room
    assert back is not b and back.n_pages == 3 and back.clean(PAGES[4]).text == b.clean(PAGES[4]).text
    models.flush()
    counts, peak = models.take_counts()
    assert counts == {"evicted": 2, "reloaded": 1} and peak == 3  # "b" in memory while written
    assert models.get("nope") is None and "nope" not in models and models.n_pages("nope") == 0
    # at the close, an evicted model is saved where asked, from its file
    assert models.save("a", str(tmp_path / "saved-a.json")) and SiteCleaner.load(tmp_path / "saved-a.json").n_pages == 2
    models.close()
    assert (tmp_path / "saved-a.json").exists()  # a folder it did not make is not removed


def test_a_model_asked_for_before_it_is_written_out_stays(tmp_path):
    models, locks = _models(tmp_path)
    a = _fitted(2)
    models.put("a", a)
    with locks.setdefault("a", threading.Lock()):  # in use: its writing waits
        models.put("b", _fitted(3))
        assert len(models) == 1 and models.in_memory == 2 and "a" in models
        assert models.get("a") is a  # taken back: "b" leaves instead
    models.flush()
    assert models.get("a") is a and models.take_counts()[0] == {"evicted": 1}
    assert not list(tmp_path.glob("*a-*.json"))


def test_a_refinement_under_way_is_in_the_written_model(tmp_path):
    models, locks = _models(tmp_path)
    a = _fitted(2)
    models.put("a", a)
    with locks.setdefault("a", threading.Lock()):  # a thread refining "a"...
        models.put("b", _fitted(3))  # ...while "a" is evicted
        a.partial_fit(PAGES[3])
    models.flush()
    assert models.take_counts()[0] == {"evicted": 1}
    assert models.n_pages("a") == 3 and models.get("a").n_pages == 3


def _thread_store(tmp_path) -> SiteModelStore:
    return SiteModelStore(SSTConfig(max_models=1, workers="thread", model_dir=str(tmp_path)))


def test_a_thread_refines_the_model_evicted_since_the_call_was_made(tmp_path, monkeypatch):
    store = _thread_store(tmp_path)
    calls = []
    monkeypatch.setattr(store.dispatch, "call", lambda site, op, args, thread_fn: calls.append(thread_fn) or Deferred())
    store.put("a", _fitted(2))
    store.refine("a", PageRecord("http://a/3", PAGES[3].encode(), "utf-8", "a"))
    store.put("b", _fitted(3))  # "a" evicted before the refinement runs
    store._models.flush()
    assert len(store._models) == 1 and store.model_pages("a") == 2
    assert calls.pop()() == 3  # runs in a worker thread: reads "a" back, refines it
    store.put("c", _fitted(4))  # and out again, with the refinement
    store._models.flush()
    assert store.model_pages("a") == 3 and store.get("a").n_pages == 3
    store.close()
    assert SiteCleaner.load(store.files.path("a")).n_pages == 3  # in SST_MODEL_DIR


def test_a_thread_cleans_with_the_model_read_back(tmp_path, monkeypatch):
    store = _thread_store(tmp_path)
    calls = []
    monkeypatch.setattr(store.dispatch, "call", lambda site, op, args, thread_fn: calls.append(thread_fn) or Deferred())
    a = _fitted(4)
    store.put("a", a)
    store.put("b", _fitted(3))
    store._models.flush()
    store.clean(PageRecord("http://a/5", PAGES[4].encode(), "utf-8", "a"))
    result = calls.pop()()
    assert result.site_model and result.text == a.clean(PAGES[4]).text
    store.close()


class _Pool:
    """The part of WorkerPool a worker's restart uses: one worker, calls recorded."""

    n, restarts, spawned = 1, 0, 1

    def __init__(self) -> None:
        self.generation = [0]
        self.calls: list = []

    def index(self, site: str) -> int:
        return 0

    def restart(self, i: int) -> None:
        self.restarts += 1
        self.generation[i] += 1

    def submit(self, i: int, op: str, site: str, *args):
        self.calls.append((op, site, args))
        return Future()


def test_a_restarted_worker_is_given_the_evicted_models_by_their_files(tmp_path):
    models, _ = _models(tmp_path)
    a, b = _fitted(2), _fitted(3)
    models.put("a", a)
    models.put("b", b)
    models.flush()
    dispatch = Dispatcher(SSTConfig(max_models=1), models, lambda *args: None)
    dispatch._pool = pool = _Pool()
    dispatch._recover(type("Failure", (), {"value": "died"})(), pool, 0)
    assert pool.restarts == 1
    given = {site: (op, args) for op, site, args in pool.calls}
    assert given["b"][0] == "put" and given["b"][1][0]["learnt_pages"] == b.to_dict()["learnt_pages"]
    op, (path,) = given["a"]
    assert op == "load" and SiteCleaner.load(path).clean(PAGES[4]).text == a.clean(PAGES[4]).text
    assert dispatch.remote_pages == {"a": 2, "b": 3}
    assert len(models) == 1  # the evicted model was not read back here
    models.close()
