"""The framework-free engine: page preparation, the methods of the papers, results and
model files. Nothing here imports Scrapy or Twisted (a test checks it).

Data flows one way: HTML -> :func:`parse_html` (cleaned DOM, within :class:`Limits`) ->
a method's page representation (style tree, blocks, sentences) -> the site model ->
the page mapped onto it -> :class:`CleanResult`.
"""

from sst_cleaner.engine import _segment
from sst_cleaner.engine._cleaner import SiteCleaner
from sst_cleaner.engine._dom import PreparedPage, as_page, decode_html, normalize_space, parse_html
from sst_cleaner.engine._explain import PageExplanation, explain
from sst_cleaner.engine._limits import DEFAULT_LIMITS, Limits
from sst_cleaner.engine._metadata import extract_metadata
from sst_cleaner.engine._model_io import ModelFormatError
from sst_cleaner.engine._registry import DEFAULT_METHOD, Method, available_methods, learns_in_shards, register_method
from sst_cleaner.engine._result import INFORMATIVE, NOISE, Block, CleanResult

#: "compiled" when the engine's per-page modules run as their Cython builds (see setup.py),
#: "pure Python" where the package was installed without a compiler or with
#: SST_CLEANER_PURE_PYTHON set: both give the same output
ENGINE_BUILD = "pure Python" if (_segment.__file__ or "").endswith(".py") else "compiled"

__all__ = [
    "DEFAULT_LIMITS",
    "ENGINE_BUILD",
    "DEFAULT_METHOD",
    "INFORMATIVE",
    "NOISE",
    "Block",
    "CleanResult",
    "Limits",
    "Method",
    "ModelFormatError",
    "PageExplanation",
    "PreparedPage",
    "SiteCleaner",
    "as_page",
    "available_methods",
    "decode_html",
    "explain",
    "extract_metadata",
    "learns_in_shards",
    "normalize_space",
    "parse_html",
    "register_method",
]
