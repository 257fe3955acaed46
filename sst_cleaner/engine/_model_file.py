"""The one bounded reader of model files, and the strict schema a model must match.

A model file is untrusted input: it may be a symlink to ``/dev/zero``, a FIFO that never
ends, a directory, 30 MB of keys nobody reads, or a hand-edited ``"threshold": "nan"``.
Every model read goes through :func:`read_model_bytes` (what may be opened and how much
is read) and :func:`check_model` (what the parsed JSON may hold) before any method sees
it. Everything past these checks is a :class:`~sst_cleaner.engine._model_io.ModelFormatError`;
nothing in a model is ever executed, unpickled or used as a path.
"""

from __future__ import annotations

import math
import os
import re
import stat
from typing import Any

from sst_cleaner.engine._model_io import FORMAT, ModelFormatError

#: what is read at a time: the cap is checked between chunks, so a file that grows while
#: it is read (or lies about its size) costs at most one chunk past the cap
CHUNK_BYTES = 1 << 20

#: nesting of a model's JSON (the built-in methods' models nest 6 deep at most)
MAX_DEPTH = 16
#: length of any key or string in a model (style labels are cut at 80 characters per
#: attribute; the longest seen on the dev corpora is 204)
MAX_STRING_CHARS = 4096
#: parameters a model file may carry, and what their values may look like: a word such
#: as "exact", never a path or an import path
MAX_PARAMS = 32
_PARAM_WORD = re.compile(r"[A-Za-z0-9_\-]{0,64}")
#: integers a model may hold (counts and lengths)
MAX_INT = 10**15

#: method parameters that name a file: never taken from a model file, whatever their value
#: (``open(True)`` is ``open(1)``: a boolean "scorer" once closed the process's stdout)
FILE_PARAMS = frozenset(("scorer",))

# "learnt_pages": the hashed keys of the pages a model learnt (checked by LearntPages)
_TOP_KEYS = frozenset(("format", "format_version", "method", "params", "model", "learnt_pages"))
_SITE_STATS_KEYS_V1 = frozenset(("n_pages", "page_fps", "sent_df", "sent_len", "node_df", "node_sent", "node_feat"))
_SITE_STATS_KEYS = frozenset(("n_pages", "page_fps", "sents", "nodes", "once"))
#: a 64-bit hash in the compact form: 11 base64url characters
_HASH_KEY = re.compile(r"[A-Za-z0-9_\-]{11}")
#: short hashes of one-page sentences: 8 base64url characters each, concatenated
_ONCE_STRING = re.compile(r"(?:[A-Za-z0-9_\-]{8})*")


def read_model_bytes(
    path: Any, cap: int, what: str = "model file", error: type[Exception] = ModelFormatError, follow: bool = False
) -> bytes:
    """The bytes of the regular file at ``path``, at most ``cap`` of them.

    Refused: a symlink as the last path component (``O_NOFOLLOW``: it could point at a
    device), anything that is not a regular file once opened (``fstat``: a FIFO, a
    device, a directory; opened non-blocking, so a FIFO without a writer cannot hang the
    open), and a file longer than ``cap`` (its size is checked before reading and the
    bytes while reading, so a file that grows cannot slip past).

    The command line reads its page files with this too (``what`` and ``error`` name
    them; ``follow``: a symlink to a regular file is a page, the ``fstat`` check still
    refuses one to a device or FIFO).
    """
    path = os.fspath(path)
    flags = (
        os.O_RDONLY
        | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
        | getattr(os, "O_NONBLOCK", 0)
        | getattr(os, "O_CLOEXEC", 0)
        | getattr(os, "O_BINARY", 0)
    )
    if not follow and not getattr(os, "O_NOFOLLOW", 0) and os.path.islink(path):  # platforms without it
        raise error(f"{what} {path!r} is a symbolic link")
    try:
        fd = os.open(path, flags)
    except OSError as exc:  # ELOOP: a symlink; EACCES; ENOENT; EISDIR...
        raise error(f"cannot open {what} {path!r}: {exc.strerror or exc}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{what} {path!r} is not a regular file")
        if st.st_size > cap:
            raise error(f"{what} {path!r} is {st.st_size} bytes, over the {cap} limit")
        chunks, total = [], 0
        while True:
            try:
                chunk = os.read(fd, min(CHUNK_BYTES, cap + 1 - total))
            except OSError as exc:
                raise error(f"cannot read {what} {path!r}: {exc.strerror or exc}") from exc
            if not chunk:
                break
            total += len(chunk)
            if total > cap:
                raise error(f"{what} {path!r} is over the {cap} byte limit")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def check_model(data: Any) -> None:
    """Raise ``ModelFormatError`` unless ``data`` (parsed JSON) is a well-formed model:
    exactly the wrapper's keys, plain-word parameters, a state within the depth and
    string caps, and, for methods whose state is known here, exactly their schema and
    consistent counts."""
    if not isinstance(data, dict):
        raise ModelFormatError("model file does not hold a JSON object")
    extra = set(data) - _TOP_KEYS
    if extra:
        raise ModelFormatError(f"unknown keys in model file: {sorted(extra)[:5]}")
    if data.get("format") != FORMAT:
        return  # unwrap_model says what is wrong
    params = data.get("params")
    if isinstance(params, dict):
        check_params(params)
    _check_shape(data.get("model"))
    method, state = data.get("method"), data.get("model")
    if method == "default" and isinstance(params, dict) and "threshold" in params:
        threshold = params["threshold"]
        try:
            threshold = float(threshold)
        except (TypeError, ValueError):
            threshold = None
        if isinstance(params["threshold"], bool) or threshold is None or not 0.0 <= threshold <= 1.0:
            raise ModelFormatError("the default method's threshold must be a probability in [0, 1]")
    if method in ("default", "sentences") and isinstance(state, dict):
        _check_stats_state(method, state, data.get("format_version"))


def check_params(params: dict) -> None:
    """Model parameters are data for a method's keywords: finite numbers, booleans, short
    words. No path (a scorer file), no import path, no limit (limits are the caller's
    policy, never a file's)."""
    from sst_cleaner.engine._limits import Limits

    if len(params) > MAX_PARAMS:
        raise ModelFormatError(f"model file has {len(params)} parameters (at most {MAX_PARAMS})")
    limit_names = Limits.field_names()
    for key, value in params.items():
        if not isinstance(key, str) or not key.isidentifier() or key.startswith("_"):
            raise ModelFormatError(f"bad parameter name in model file: {key!r}"[:200])
        if key in limit_names:
            raise ModelFormatError(f"model file sets the limit {key!r}: limits come from the caller")
        if key in FILE_PARAMS:
            raise ModelFormatError(f"model file sets {key!r}, which names a file: paths are refused")
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int):
            if abs(value) > MAX_INT:
                raise ModelFormatError(f"parameter {key!r} is out of range")
            continue
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ModelFormatError(f"parameter {key!r} is not a finite number")
            continue
        if isinstance(value, str) and _PARAM_WORD.fullmatch(value):
            try:
                number = float(value)
            except ValueError:
                continue
            if not math.isfinite(number):
                raise ModelFormatError(f"parameter {key!r} is not a finite number: {value!r}")
            continue
        raise ModelFormatError(
            f"parameter {key!r} of the model file is not a number, a boolean or a "
            f"plain word (paths and code references are refused)"
        )


def saved_params(params: dict) -> dict:
    """The parameters a saved model keeps: those :func:`check_params` accepts back. A
    path given for an experiment (``scorer=``) is left out; pass it again to ``load``."""
    kept = {}
    for key, value in params.items():
        try:
            check_params({key: value})
        except ModelFormatError:
            continue
        kept[key] = value
    return kept


def _check_shape(state: Any) -> None:
    """Depth, string lengths and numbers of the whole state, walked without recursion."""
    stack = [(state, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            if depth > MAX_DEPTH:
                raise ModelFormatError(f"model state nests deeper than {MAX_DEPTH}")
            for key, item in value.items():
                if len(key) > MAX_STRING_CHARS:
                    raise ModelFormatError("model state holds an over-long key")
                if isinstance(item, (dict, list)):
                    stack.append((item, depth + 1))
                else:
                    _check_scalar(item)
        elif isinstance(value, list):
            if depth > MAX_DEPTH:
                raise ModelFormatError(f"model state nests deeper than {MAX_DEPTH}")
            for item in value:
                if isinstance(item, (dict, list)):
                    stack.append((item, depth + 1))
                else:
                    _check_scalar(item)
        else:
            _check_scalar(value)


def _check_scalar(value: Any) -> None:
    if isinstance(value, str):
        if len(value) > MAX_STRING_CHARS:
            raise ModelFormatError("model state holds an over-long string")
    elif isinstance(value, bool) or value is None:
        pass
    elif isinstance(value, int):
        if abs(value) > MAX_INT:
            raise ModelFormatError("model state holds an out-of-range integer")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ModelFormatError("model state holds a non-finite number")


def _count_map(name: str, value: Any, n_pages: int, minimum: int = 0) -> dict:
    if not isinstance(value, dict):
        raise ModelFormatError(f"site_stats.{name} must be an object")
    for count in value.values():
        if isinstance(count, bool) or not isinstance(count, int) or not minimum <= count <= n_pages:
            raise ModelFormatError(f"site_stats.{name} holds a count outside {minimum}..{n_pages}")
    return value


def _check_stats_state(method: str, state: dict, version: Any = 2) -> None:
    """The state of the methods built on :class:`~sst_cleaner.engine.methods.sitestats.site_stats.SiteStats`:
    exactly its keys, and counts that agree with the number of pages (a page count
    over ``n_pages`` or a negative sum is a forged or corrupt model)."""
    allowed = {"site_stats"} | ({"node_thresholds"} if method == "sentences" else set())
    extra = set(state) - allowed
    if extra:
        raise ModelFormatError(f"unknown keys in the {method!r} model state: {sorted(extra)[:5]}")
    stats = state.get("site_stats")
    if not isinstance(stats, dict):
        raise ModelFormatError("model state lacks site_stats")
    keys = _SITE_STATS_KEYS_V1 if version == 1 else _SITE_STATS_KEYS
    if set(stats) != keys:
        raise ModelFormatError(f"site_stats must have exactly the keys {sorted(keys)}")
    n = stats["n_pages"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ModelFormatError("site_stats.n_pages must be a count")
    fps = _count_map("page_fps", stats["page_fps"], n, minimum=1)
    if sum(fps.values()) != n:
        raise ModelFormatError("site_stats.page_fps does not add up to n_pages")
    if version == 1:
        _check_stats_v1(stats, n)
    else:
        _check_stats_compact(stats, fps, n)
    if method == "sentences":
        thr = state.get("node_thresholds", {})
        if not isinstance(thr, dict):
            raise ModelFormatError("node_thresholds must be an object")


def _is_count(value: Any, low: int, high: int) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and low <= value <= high


def _hash_keys(name: str, table: dict) -> None:
    for key in table:
        if not _HASH_KEY.fullmatch(key):
            raise ModelFormatError(f"site_stats.{name} holds a key that is not an 11-character hash")


def _check_feats(d: Any) -> None:
    """A node's feature sums: S, or [S, Q] when Q is not 0 (numbers >= 0)."""
    if not isinstance(d, dict):
        raise ModelFormatError("site_stats: a node's feature sums must be an object")
    for value in d.values():
        pair = value if isinstance(value, list) else [value, 0]
        if len(pair) != 2 or any(isinstance(x, bool) or not isinstance(x, (int, float)) or x < 0 for x in pair):
            raise ModelFormatError("site_stats: a feature sum must be S >= 0 or [S >= 0, Q >= 0]")


def _check_stats_compact(stats: dict, fps: dict, n: int) -> None:
    """The compact site statistics (format version 2; see SiteStats.to_dict)."""
    _hash_keys("page_fps", fps)
    sents = stats["sents"]
    if not isinstance(sents, dict):
        raise ModelFormatError("site_stats.sents must be an object")
    _hash_keys("sents", sents)
    for row in sents.values():
        if (
            not isinstance(row, list)
            or len(row) != 2
            or not _is_count(row[0], 1, n)
            or not _is_count(row[1], 0, MAX_INT)
        ):
            raise ModelFormatError(f"site_stats.sents values must be [pages 1..{n}, length >= 0]")
    nodes = stats["nodes"]
    if not isinstance(nodes, dict):
        raise ModelFormatError("site_stats.nodes must be an object")
    _hash_keys("nodes", nodes)
    for row in nodes.values():
        if (
            not isinstance(row, list)
            or len(row) != 4
            or not _is_count(row[0], 0, n)
            or not isinstance(row[1], dict)
            or not _is_count(row[2], 0, MAX_INT)
        ):
            raise ModelFormatError(
                "site_stats.nodes values must be [pages, {sentence: pages}, one-page length, {feature: sums}]"
            )
        _hash_keys("nodes' sentences", row[1])
        _count_map("nodes' sentences", row[1], n, minimum=1)
        _check_feats(row[3])
    once = stats["once"]
    if not isinstance(once, list) or not all(isinstance(s, str) and _ONCE_STRING.fullmatch(s) for s in once):
        raise ModelFormatError("site_stats.once must be a list of strings of 8-character hashes")


def _check_stats_v1(stats: dict, n: int) -> None:
    """The site statistics in full (format version 1)."""
    _count_map("sent_df", stats["sent_df"], n, minimum=1)
    _count_map("node_df", stats["node_df"], n, minimum=1)
    sent_len = stats["sent_len"]
    if not isinstance(sent_len, dict) or any(
        isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in sent_len.values()
    ):
        raise ModelFormatError("site_stats.sent_len must map sentences to lengths")
    node_sent = stats["node_sent"]
    if not isinstance(node_sent, dict):
        raise ModelFormatError("site_stats.node_sent must be an object")
    for d in node_sent.values():
        _count_map("node_sent", d, n, minimum=1)
    node_feat = stats["node_feat"]
    if not isinstance(node_feat, dict):
        raise ModelFormatError("site_stats.node_feat must be an object")
    for d in node_feat.values():
        if not isinstance(d, dict):
            raise ModelFormatError("site_stats.node_feat must map nodes to objects")
        for pair in d.values():
            if (
                not isinstance(pair, list)
                or len(pair) != 2
                or any(isinstance(x, bool) or not isinstance(x, (int, float)) or x < 0 for x in pair)
            ):
                raise ModelFormatError("site_stats.node_feat values must be [S >= 0, Q >= 0]")
