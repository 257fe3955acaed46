"""The method protocol and the registry of methods.

A *method* is a class registered with :func:`register_method`; ``SiteCleaner(method=name)``
builds it. This module depends on nothing above it (the methods import it, and the
cleaner looks methods up here), so registering never makes an import cycle.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Protocol, runtime_checkable

from sst_cleaner.engine._dom import PreparedPage
from sst_cleaner.engine._result import CleanResult

#: the modules of the built-in methods, imported on first use of the registry
BUILTIN_METHODS = (
    "sst_cleaner.engine.methods.cetd",
    "sst_cleaner.engine.methods.cehtd",
    "sst_cleaner.engine.methods.sst.sst",
    "sst_cleaner.engine.methods.sst.sentences",
    "sst_cleaner.engine.methods.sitestats.hybrid",
    "sst_cleaner.engine.methods.infodiscoverer",
    "sst_cleaner.engine.methods.wisdom",
)
DEFAULT_METHOD = "default"

_METHODS: dict[str, Any] = {}
_loaded = False


@runtime_checkable
class Method(Protocol):
    """What a method implements. It receives prepared pages and keeps its model as
    JSON-serialisable state (models are never pickled)."""

    n_pages: int  # pages the model has seen

    def fit(self, pages: Any) -> None:
        """Learn from an iterable of :class:`PreparedPage` of one site, walked once."""

    def partial_fit(self, page: PreparedPage) -> None:
        """Learn one more page."""

    def clean(self, page: PreparedPage) -> CleanResult:
        """The page's informative content (works before any fit: page-level evidence)."""

    def to_dict(self) -> dict:
        """The model's state, JSON-serialisable."""

    @classmethod
    def from_dict(cls, state: dict, **params: Any) -> "Method":
        """The model :meth:`to_dict` wrote."""


def register_method(name: str) -> Callable[[type], type]:
    """Class decorator: make a method selectable as ``SiteCleaner(method=name)``."""

    def deco(cls: type) -> type:
        cls.method_name = name  # type: ignore[attr-defined]
        _METHODS[name] = cls
        return cls

    return deco


def _load_builtin_methods() -> None:
    global _loaded
    if not _loaded:
        for module in BUILTIN_METHODS:
            importlib.import_module(module)
        _loaded = True


def method_class(name: str) -> Any:
    """The class registered as ``name`` (ValueError naming the choices if none)."""
    _load_builtin_methods()
    if name not in _METHODS:
        raise ValueError(f"unknown method {name!r}; choose one of {', '.join(sorted(_METHODS))}")
    return _METHODS[name]


def find_method(name: str) -> Any:
    _load_builtin_methods()
    return _METHODS.get(name)


def available_methods() -> list[str]:
    _load_builtin_methods()
    return sorted(_METHODS)


def learns_in_shards(method: str) -> bool:
    """Whether ``method``'s model can be learnt in shards and merged (``fit(n_jobs=...)``,
    see :mod:`~sst_cleaner.engine._parallel_fit`): it has ``shard_state`` and ``merge_shard``."""
    return hasattr(find_method(method), "merge_shard")
