"""The functions of the walk over libxml2's nodes (``_walk.pyx``), looked up when first
asked for.

``_walk`` imports :mod:`~sst_cleaner.engine._dom` and
:mod:`~sst_cleaner.engine._segment` (their tag sets and ``TextBlock``), so those two
cannot import it as they load: they ask here when a page first needs one of its
functions, once every module is whole. Modules ``_walk`` does not import take its
functions at their top instead.
"""

from __future__ import annotations

from typing import Any

_found: dict = {}


def walk_function(name: str) -> Any:
    """``_walk``'s function ``name`` where the engine was built with it, else None."""
    got = _found.get(name, False)
    if got is False:
        try:
            from sst_cleaner.engine import _walk
        except ImportError:
            got = None
        else:
            got = getattr(_walk, name)
        _found[name] = got
    return got
