"""The model file format: JSON, versioned, validated, written atomically.

A model file is untrusted input (it may be old, truncated, hand-edited or hostile), so it
is read as plain JSON data, size-capped, and checked before use; nothing in it is ever
executed or unpickled.

Format (``format_version`` 2; files of version 1 are read too)::

    {
      "format": "sst-cleaner-model",
      "format_version": 2,
      "method": "default",          # the SiteCleaner method that made it
      "params": {...},              # the SiteCleaner(**params) keyword arguments
      "model": {...}                # the method's own state (documented per method)
    }

Version 2 changed only the site statistics of the methods built on them (``default``,
``sentences``): their compact form (see
:meth:`~sst_cleaner.engine.methods.sitestats.site_stats.SiteStats.to_dict`).
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from typing import Any, Union

FORMAT = "sst-cleaner-model"
FORMAT_VERSION = 2
#: versions read: version 1 wrote the site statistics in full
READ_VERSIONS = (1, 2)
#: models bigger than this are refused (a site model is a few MB at most)
MAX_MODEL_BYTES = 256 * 1024 * 1024


class ModelFormatError(ValueError):
    """The file is not a usable sst-cleaner model (corrupt, truncated, wrong version...)."""


def wrap_model(method: str, params: dict, state: dict) -> dict:
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "method": method, "params": params, "model": state}


def unwrap_model(data: Any) -> tuple[str, dict, dict]:
    if not isinstance(data, dict):
        raise ModelFormatError("model file does not hold a JSON object")
    if data.get("format") != FORMAT:
        raise ModelFormatError("not an sst-cleaner model file (missing 'format' marker)")
    version = data.get("format_version")
    if isinstance(version, bool) or version not in READ_VERSIONS:
        raise ModelFormatError(
            f"model format version {version!r} is not supported (expected one of {', '.join(map(str, READ_VERSIONS))})"
        )
    method, params, state = data.get("method"), data.get("params"), data.get("model")
    if not isinstance(method, str) or not isinstance(params, dict) or not isinstance(state, dict):
        raise ModelFormatError("model file is missing 'method', 'params' or 'model'")
    for key in params:
        if not isinstance(key, str) or not key.isidentifier():
            raise ModelFormatError(f"bad parameter name in model file: {key!r}")
    return method, params, state


def write_json_atomic(path: Union[str, os.PathLike], data: dict, fsync: bool = True) -> None:
    """Write JSON to a temp file in the same folder, fsync, then rename over ``path``.

    Only a regular file (or nothing) at ``path`` is replaced: a rename over a FIFO, a
    device or a symbolic link would swap the thing itself for a model (``OSError``). The
    file gets the mode any new file of the process gets (0666 less the umask).

    ``fsync=False`` for files that die with the process writing them (a crawl's
    temporary folder of evicted models): the rename alone keeps readers from seeing half
    a file, and the sync is most of the cost of a small model's write."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    _check_target(path)
    os.makedirs(folder, exist_ok=True)
    fd, tmp = _create_temp(folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        _check_target(path)  # again, just before the rename: the path may have changed meanwhile
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


#: what a model path may be instead of a regular file, for the error message
_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
    (stat.S_ISSOCK, "a socket"),
)


def _check_target(path: str) -> None:
    """Refuse to replace anything at ``path`` but a regular file (a missing one is fine)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    raise OSError(f"model path {path!r} is {kind}; a model replaces only a regular file")


def _create_temp(folder: str) -> tuple[int, str]:
    """A new temp file in ``folder``: created exclusively (as ``mkstemp`` does) but with
    mode 0666, so the kernel applies the process umask (``mkstemp`` makes it 0600)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = os.path.join(folder, f".tmp-{secrets.token_hex(8)}.json")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary file name in {folder!r}")


def _reject_constant(name: str) -> Any:
    raise ModelFormatError(f"model file holds the non-finite number {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ModelFormatError(f"model file holds the non-finite number {text[:40]}")
    return value


def read_json_model(path: Union[str, os.PathLike]) -> dict:
    """Read and check a model file: every model read goes through here (see
    :mod:`~sst_cleaner.engine._model_file` for what is refused and why)."""
    from sst_cleaner.engine._model_file import check_model, read_model_bytes

    path = os.fspath(path)
    raw = read_model_bytes(path, MAX_MODEL_BYTES)
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant, parse_float=_finite_float)
    except ModelFormatError:
        raise
    # ValueError: JSON syntax, and integers over Python's 4300-digit conversion limit
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ModelFormatError(f"model file {path!r} is not valid JSON: {exc}") from exc
    check_model(data)
    return data
