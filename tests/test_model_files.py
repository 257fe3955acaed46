"""Model files are untrusted input; writes are atomic; file names cannot escape."""

from __future__ import annotations

import json
import os
import random
import re
import stat

import pytest
from story_pages import STORY_PAGES

from sst_cleaner import ModelFormatError, SiteCleaner, available_methods
from sst_cleaner.engine import _model_io as model_io
from sst_cleaner.scrapy._model_files import model_filename

PAGES = STORY_PAGES


def _constructible(method: str) -> bool:
    # a method another engineer is still writing may not build yet (e.g. missing data)
    try:
        SiteCleaner(method=method)
        return True
    except Exception:
        return False


METHODS = [m for m in available_methods() if _constructible(m)]


def _model(method: str) -> dict:
    return SiteCleaner(method=method).fit(PAGES).to_dict()


def _write(tmp_path, raw: bytes):
    path = tmp_path / "m.json"
    path.write_bytes(raw)
    return path


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\x00\x01\x02",
        b"\xff\xfe{}",
        b"{",
        b"[]",
        b"null",
        b'"text"',
        b'{"format": "sst-cleaner-model"}',
        b'{"format": "sst-cleaner-model", "format_version": 99, "method": "cetd", "params": {}, "model": {}}',
        b'{"format": "sst-cleaner-model", "format_version": 1, "method": "nope", "params": {}, "model": {}}',
        b'{"format": "sst-cleaner-model", "format_version": 1, "method": "cetd", "params": {"__class__": 1}, "model": {}}',
        b'{"format": "sst-cleaner-model", "format_version": 1, "method": "cetd", "params": {"no_such_param": 1}, "model": {}}',
        b'{"format": "sst-cleaner-model", "format_version": 1, "method": "cetd", "params": [], "model": {}}',
        b'{"a": NaN}',
        b'{"a": Infinity}',
        b'{"a": -Infinity}',
        b'{"a": 1e999}',
        b'{"a": ' + b"9" * 5000 + b"}",  # over Python's int-digit limit
        b"[" * 100_000 + b"]" * 100_000,  # deep nesting
        b'{"a": "\xed\xa0\x80"}',  # a UTF-8-encoded surrogate
    ],
)
def test_broken_files_raise_model_format_error(tmp_path, raw):
    with pytest.raises(ModelFormatError):
        SiteCleaner.load(_write(tmp_path, raw))


def test_missing_file_and_oversized_file(tmp_path, monkeypatch):
    with pytest.raises(ModelFormatError):
        SiteCleaner.load(tmp_path / "absent.json")
    path = _write(tmp_path, b"{}" + b" " * 2000)
    monkeypatch.setattr(model_io, "MAX_MODEL_BYTES", 1000)
    with pytest.raises(ModelFormatError, match="limit"):
        SiteCleaner.load(path)


@pytest.mark.parametrize("method", METHODS)
def test_truncated_model_files_are_rejected(tmp_path, method):
    cleaner = SiteCleaner(method=method).fit(PAGES)
    path = tmp_path / "good.json"
    cleaner.save(path)
    raw = path.read_bytes()
    assert SiteCleaner.load(path).clean(PAGES[0]).text == cleaner.clean(PAGES[0]).text
    for cut in sorted({1, len(raw) // 3, len(raw) // 2, len(raw) - 1}):
        with pytest.raises(ModelFormatError):
            SiteCleaner.load(_write(tmp_path, raw[:cut]))


_HOSTILE_VALUES = [None, "x", -1, 10**300, 1.5, [], {}, [[[]]], {"a": {"b": None}}, True, "\u0000", "../../etc"]


def _mutations(state, rng, n):
    """Paths into the state JSON, each replaced by a hostile value."""
    paths = []
    stack = [((), state)]
    while stack:
        path, node = stack.pop()
        paths.append(path)
        if isinstance(node, dict):
            stack.extend((path + (k,), v) for k, v in node.items())
        elif isinstance(node, list) and node:
            stack.append((path + (0,), node[0]))
            stack.append((path + (len(node) - 1,), node[-1]))
    rng.shuffle(paths)
    for path in paths[:n]:
        yield path, rng.choice(_HOSTILE_VALUES)


def _set(obj, path, value):
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


@pytest.mark.parametrize("method", METHODS)
def test_wrong_types_in_state_load_cleanly_or_raise_model_format_error(method):
    """Every corruption either gives a cleaner that works, or ModelFormatError: never
    another exception."""
    rng = random.Random(method)
    good = _model(method)
    for path, value in _mutations(good["model"], rng, 60):
        data = json.loads(json.dumps(good))
        if path:
            _set(data["model"], path, value)
        else:
            data["model"] = value
        try:
            cleaner = SiteCleaner.from_dict(data)
        except ModelFormatError:
            continue
        result = cleaner.clean(PAGES[1])  # a loaded model must work
        assert isinstance(result.text, str)


def test_hostile_params_are_rejected_not_executed():
    data = _model(METHODS[0])
    for params in ({"__init__": 1}, {"a-b": 1}, {1: 2}, {"max_page_bytes": 10}):
        bad = dict(data, params=params)
        with pytest.raises(ModelFormatError):
            SiteCleaner.from_dict(bad)


def test_limits_come_from_the_caller_not_the_file(tmp_path):
    from sst_cleaner.engine._limits import Limits

    path = tmp_path / "m.json"
    SiteCleaner(method=METHODS[0], max_elements=100).fit(PAGES).save(path)
    assert "max_elements" not in json.loads(path.read_text())["params"]
    assert SiteCleaner.load(path).limits == Limits()
    assert SiteCleaner.load(path, limits=Limits(max_elements=99)).limits.max_elements == 99


# -- atomic writes --------------------------------------------------------------------------
def test_crash_mid_write_leaves_the_old_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "site.json"
    old = SiteCleaner(method=METHODS[0]).fit(PAGES)
    old.save(path)
    before = path.read_bytes()

    real_dump = json.dump

    def dying_dump(obj, fh, **kw):
        fh.write('{"format": "sst-cleaner-model", "form')  # half a file reaches the disk
        fh.flush()
        raise KeyboardInterrupt("power cut")

    monkeypatch.setattr(json, "dump", dying_dump)
    with pytest.raises(KeyboardInterrupt):
        SiteCleaner(method=METHODS[0]).fit(PAGES[:2]).save(path)
    monkeypatch.setattr(json, "dump", real_dump)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["site.json"]  # no temp file left behind
    assert SiteCleaner.load(path).n_pages == old.n_pages


def test_crash_at_rename_leaves_the_old_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "site.json"
    SiteCleaner(method=METHODS[0]).fit(PAGES).save(path)
    before = path.read_bytes()

    def no_rename(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", no_rename)
    with pytest.raises(OSError):
        SiteCleaner(method=METHODS[0]).fit(PAGES[:2]).save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["site.json"]


def test_model_with_nan_cannot_be_written(tmp_path):
    with pytest.raises(ValueError):
        model_io.write_json_atomic(tmp_path / "x.json", {"a": float("nan")})
    assert not (tmp_path / "x.json").exists()


def _fifo(tmp_path):
    path = tmp_path / "model.json"
    os.mkfifo(path)
    return path


def test_a_model_never_replaces_a_fifo(tmp_path):
    path = _fifo(tmp_path)
    with pytest.raises(OSError, match="FIFO"):
        SiteCleaner(method=METHODS[0]).fit(PAGES).save(path)
    assert stat.S_ISFIFO(os.lstat(path).st_mode)  # still the FIFO, not a model
    assert os.listdir(tmp_path) == ["model.json"]  # no temp file left behind


def test_a_model_never_replaces_a_link_to_a_device(tmp_path):
    path = tmp_path / "model.json"
    os.symlink(os.devnull, path)
    with pytest.raises(OSError, match="symbolic link"):
        SiteCleaner(method=METHODS[0]).fit(PAGES).save(path)
    assert os.path.islink(path) and os.readlink(path) == os.devnull
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    assert os.listdir(tmp_path) == ["model.json"]


def test_fit_on_the_command_line_refuses_a_fifo_model_path(tmp_path, capsys):
    from sst_cleaner.cli import main

    site = tmp_path / "site"
    site.mkdir()
    for i, html in enumerate(PAGES):
        (site / f"p{i}.html").write_text(html, encoding="utf-8")
    path = _fifo(tmp_path)
    assert main(["fit", str(site), "--model", str(path)]) == 3  # the model exit code
    assert "FIFO" in capsys.readouterr().err
    assert stat.S_ISFIFO(os.lstat(path).st_mode)


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_model_files_get_the_process_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        path = tmp_path / "m.json"
        SiteCleaner(method=METHODS[0]).fit(PAGES).save(path)
        SiteCleaner(method=METHODS[0]).fit(PAGES).save(path)  # a replaced file too
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == mode


# -- safe file names --------------------------------------------------------------------------
_NAME = re.compile(r"^site-[a-z0-9_-]*-[0-9a-f]{20}\.json$")
_RESERVED = {"con", "prn", "aux", "nul"} | {f"com{i}" for i in range(10)} | {f"lpt{i}" for i in range(10)}
HOSTILE_KEYS = [
    "example.com",
    "www.example.com",
    "EXAMPLE.com",
    "../../etc/passwd",
    "..",
    ".",
    "",
    "/",
    "\\",
    "a/b",
    "a_b",
    "a\\..\\b",
    "host\x00.com",
    "CON",
    "con",
    "NUL",
    "nul.txt",
    "COM1",
    "LPT9",
    "aux.",
    "trailing. ",
    "trailing...",
    " spaced ",
    "x" * 10_000,
    "a." * 5000,
    "bücher.de",
    "例子.测试",
    "\ud800.com",
    "пример.рф",
    "xn--bcher-kva.de",
    "evil.com%2f..%2f",
    "host:8080",
    "C:\\Windows",
    "\u202egnp.exe",
    "..\u2215..\u2215etc",
    ".hidden",
    "-rf",
    "a\nb",
    "😀.ws",
]


@pytest.mark.parametrize("key", HOSTILE_KEYS)
def test_model_filename_is_safe(tmp_path, key):
    name = model_filename(key)
    assert _NAME.match(name), name
    assert len(name) <= 98
    stem = name.split(".")[0].lower()
    assert stem not in _RESERVED
    assert not name.endswith((".", " "))
    folder = os.path.realpath(tmp_path)
    full = os.path.realpath(os.path.join(folder, name))
    assert os.path.dirname(full) == folder
    with open(full, "w") as fh:  # really creatable
        fh.write("{}")


def test_model_filename_is_stable_readable_and_collision_free():
    assert model_filename("www.example.com").startswith("site-www_example_com-")
    assert model_filename("bücher.de") != model_filename("b_cher.de")
    assert model_filename("a.com") == model_filename("a.com")
    names = [model_filename(k) for k in HOSTILE_KEYS]
    assert len(set(names)) == len(HOSTILE_KEYS)
    with pytest.raises((TypeError, AttributeError)):
        model_filename(b"example.com")
