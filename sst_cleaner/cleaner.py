"""``SiteCleaner``: the public API over every method.

    cleaner = SiteCleaner()                 # default method
    cleaner.fit(pages)                      # html or (url, html) of ONE site
    cleaner.partial_fit(page)
    result = cleaner.clean(html, url=None)  # works before fit (page-level fallback)
    cleaner.save(path); SiteCleaner.load(path)

A *method* is a class registered with :func:`register_method`. It receives prepared pages
(:class:`~sst_cleaner.dom.PreparedPage`) and must implement::

    fit(pages: list[PreparedPage]) -> None
    partial_fit(page: PreparedPage) -> None
    clean(page: PreparedPage) -> CleanResult
    to_dict() -> dict                       # JSON-serialisable model state
    from_dict(state: dict, **params) (classmethod)
    n_pages: int                            # pages the model has seen

Models are saved as JSON (see :mod:`sst_cleaner.model_io`), never pickled.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Optional, Union

from .dom import HtmlInput, PreparedPage, parse_html
from .result import CleanResult

PageInput = Union[HtmlInput, tuple]

_METHODS: dict[str, Callable[..., Any]] = {}
DEFAULT_METHOD = "default"


def register_method(name: str):
    """Class decorator: make a method selectable as ``SiteCleaner(method=name)``."""

    def deco(cls):
        cls.method_name = name
        _METHODS[name] = cls
        return cls

    return deco


def available_methods() -> list[str]:
    _load_builtin_methods()
    return sorted(_METHODS)


def _load_builtin_methods() -> None:
    # imported lazily so that the registry fills itself on first use without import cycles
    import importlib

    for mod in ("cetd", "sst", "sentences", "hybrid", "infodiscoverer", "wisdom"):
        try:
            importlib.import_module(f"{__package__}.{mod}")
        except ModuleNotFoundError as exc:  # a method module not written yet
            if exc.name != f"{__package__}.{mod}":
                raise


def _as_page(page: PageInput, url: Optional[str] = None) -> PreparedPage:
    if isinstance(page, PreparedPage):
        return page
    if isinstance(page, tuple):
        if len(page) != 2:
            raise ValueError("a page pair must be (url, html)")
        url, page = page
    return parse_html(page, url=url)


class SiteCleaner:
    """Learns one site's template from its pages and cleans pages of that site."""

    def __init__(self, method: str = DEFAULT_METHOD, **params: Any):
        _load_builtin_methods()
        if method not in _METHODS:
            raise ValueError(f"unknown method {method!r}; choose one of {', '.join(sorted(_METHODS))}")
        self.method = method
        self.params = dict(params)
        self._impl = _METHODS[method](**params)

    # -- learning -------------------------------------------------------------------
    def fit(self, pages: Iterable[PageInput]) -> "SiteCleaner":
        """Learn the site from ``pages`` (html str/bytes, or (url, html) pairs), replacing
        anything learnt before."""
        prepared = [_as_page(p) for p in pages]
        self._impl = _METHODS[self.method](**self.params)
        self._impl.fit(prepared)
        return self

    def partial_fit(self, page: PageInput, url: Optional[str] = None) -> "SiteCleaner":
        """Add one more page of the site to the model."""
        self._impl.partial_fit(_as_page(page, url))
        return self

    @property
    def n_pages(self) -> int:
        """Number of pages the model has learnt from."""
        return int(getattr(self._impl, "n_pages", 0))

    # -- cleaning -------------------------------------------------------------------
    def clean(self, html: PageInput, url: Optional[str] = None) -> CleanResult:
        """Informative content of one page of the site (page-level fallback before fit)."""
        return self._impl.clean(_as_page(html, url))

    # -- persistence ----------------------------------------------------------------
    def to_dict(self) -> dict:
        from .model_io import wrap_model

        return wrap_model(self.method, self.params, self._impl.to_dict())

    @classmethod
    def from_dict(cls, data: dict) -> "SiteCleaner":
        from .model_io import unwrap_model

        method, params, state = unwrap_model(data)
        _load_builtin_methods()
        if method not in _METHODS:
            from .model_io import ModelFormatError

            raise ModelFormatError(f"model was made by unknown method {method!r}")
        obj = cls.__new__(cls)
        obj.method = method
        obj.params = params
        obj._impl = _METHODS[method].from_dict(state, **params)
        return obj

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Write the model as JSON (atomically: a crash never leaves half a file)."""
        from .model_io import write_json_atomic

        write_json_atomic(path, self.to_dict())

    @classmethod
    def load(cls, path: Union[str, os.PathLike]) -> "SiteCleaner":
        """Read a model written by :meth:`save`; raises ``ModelFormatError`` on anything else."""
        from .model_io import read_json_model

        return cls.from_dict(read_json_model(path))

    def __repr__(self) -> str:
        return f"SiteCleaner(method={self.method!r}, pages={self.n_pages})"
