"""Defaults and parsing of the ``SST_*`` Scrapy settings.

Kept free of Scrapy imports (it reads any mapping with ``get``), so the defaults can be
listed by the README and used by tests without a crawler.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

#: every setting of the Scrapy layer and its default (the README lists the same table)
DEFAULTS: dict[str, Any] = {
    "SST_ENABLED": True,
    "SST_METHOD": "default",
    "SST_PARAMS": {},
    "SST_SAMPLE_PAGES": 20,
    "SST_MIN_FIT_PAGES": 2,
    "SST_MAX_MODEL_PAGES": 200,
    "SST_MAX_HELD_ITEMS": 10_000,
    "SST_MAX_HELD_BYTES": 64 * 1024 * 1024,
    "SST_HOLD_TIMEOUT": 120.0,
    "SST_SITE_KEY": "host",
    "SST_MODEL_DIR": None,
    "SST_TEXT_FIELD": "text",
    "SST_FORMAT": "text",
    "SST_FORMAT_LINKS": False,
    "SST_MARKDOWN_FIELD": None,
    "SST_HTML_FIELD": None,
    "SST_METADATA_FIELD": None,
    "SST_SENTENCES_FIELD": None,
    "SST_BLOCKS_FIELD": None,
    "SST_SOURCE_FIELD": None,
    "SST_URL_FIELD": "url",
    "SST_THREADS": 2,
    "SST_WORKERS": "process",
    "SST_PROCESSES": None,
    "SST_WORKER_INIT": None,
    "SST_MAX_MODELS": 1000,
}
# the fleet's settings (SST_MODEL_STORE, SST_REDIS_*) are parsed beside their code
from sst_cleaner.scrapy._redis_store import REDIS_DEFAULTS as _REDIS_DEFAULTS  # noqa: E402  (no redis import)

DEFAULTS.update(_REDIS_DEFAULTS)


#: the values of SST_FORMAT
FORMATS = ("text", "markdown", "html")


@dataclass(frozen=True)
class SSTConfig:
    """The parsed ``SST_*`` settings of one crawl."""

    enabled: bool = True
    method: str = "default"
    params: dict = field(default_factory=dict)
    sample_pages: int = 20
    min_fit_pages: int = 2
    max_model_pages: int = 200
    max_held_items: int = 10_000
    max_held_bytes: int = 64 * 1024 * 1024
    hold_timeout: float = 120.0
    site_key: Union[str, Callable[[str], str]] = "host"
    model_dir: Optional[str] = None
    text_field: str = "text"
    #: what SST_TEXT_FIELD gets: "text", "markdown" or "html" (see sst_cleaner.engine._formats)
    format: str = "text"
    format_links: bool = False
    markdown_field: Optional[str] = None
    html_field: Optional[str] = None
    metadata_field: Optional[str] = None
    sentences_field: Optional[str] = None
    blocks_field: Optional[str] = None
    source_field: Optional[str] = None
    url_field: Optional[str] = "url"
    threads: int = 2
    workers: str = "process"
    processes: int = 1
    worker_init: Optional[str] = None
    max_models: int = 1000


def outputs_of(config: "SSTConfig") -> tuple:
    """What a page's cleaning must send back beyond the text, for these settings: any of
    "markdown", "html", "metadata" (and "links" to write links in the first two)."""
    out = {config.format} - {"text"}
    out |= {
        name
        for name, f in (
            ("markdown", config.markdown_field),
            ("html", config.html_field),
            ("metadata", config.metadata_field),
        )
        if f
    }
    if config.format_links and out & {"markdown", "html"}:
        out.add("links")
    return tuple(sorted(out))


def _opt_str(value: Any) -> Optional[str]:
    if value is None:
        return None
    value = str(value).strip()
    return value or None


def checked_number(name: str, raw: Any, kind: type, minimum: float) -> Any:
    """``raw`` as ``kind`` (int or float), at least ``minimum``; a ``ValueError`` naming the
    setting otherwise."""
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {raw!r}") from None
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def load_config(settings: Any) -> SSTConfig:
    """Read the ``SST_*`` settings (a Scrapy ``Settings`` or a plain dict).

    Raises ``ValueError`` with the offending setting's name on a bad value, so a typo
    stops the crawl at start-up instead of half-way through.
    """

    def get(name: str) -> Any:
        value = settings.get(name) if hasattr(settings, "get") else None
        return DEFAULTS[name] if value is None else value

    def get_int(name: str, minimum: int) -> int:
        return checked_number(name, get(name), int, minimum)

    def get_bool(name: str) -> bool:
        value = get(name)
        if isinstance(value, str):
            return value.strip().lower() not in ("0", "false", "no", "off", "")
        return bool(value)

    params = get("SST_PARAMS")
    if isinstance(params, str):  # -s SST_PARAMS='{"alpha": 0.5}' on the command line
        import json

        params = json.loads(params) if params.strip() else {}
    if hasattr(params, "copy_to_dict"):
        params = params.copy_to_dict()
    if not isinstance(params, dict):
        raise ValueError(f"SST_PARAMS must be a dict, got {type(params).__name__}")
    try:
        timeout = float(get("SST_HOLD_TIMEOUT"))
    except (TypeError, ValueError):
        raise ValueError(f"SST_HOLD_TIMEOUT must be a number of seconds, got {get('SST_HOLD_TIMEOUT')!r}") from None
    site_key = get("SST_SITE_KEY")
    if not callable(site_key) and not isinstance(site_key, str):
        raise ValueError("SST_SITE_KEY must be 'host', 'domain', a callable or its import path")
    text_field = _opt_str(get("SST_TEXT_FIELD"))
    if text_field is None:
        raise ValueError("SST_TEXT_FIELD must name an item field")
    model_dir = get("SST_MODEL_DIR")
    fmt = str(get("SST_FORMAT")).strip().lower()
    if fmt not in FORMATS:
        raise ValueError(f"SST_FORMAT must be one of {', '.join(FORMATS)}, got {get('SST_FORMAT')!r}")
    workers = str(get("SST_WORKERS")).strip().lower()
    if workers in ("processes", "proc"):
        workers = "process"
    if workers in ("threads",):
        workers = "thread"
    if workers not in ("process", "thread"):
        raise ValueError(f"SST_WORKERS must be 'process' or 'thread', got {get('SST_WORKERS')!r}")
    if get("SST_PROCESSES") is None:
        from sst_cleaner.scrapy._workers import default_processes

        processes = default_processes()
    else:
        processes = get_int("SST_PROCESSES", 1)
    worker_init = get("SST_WORKER_INIT")
    if callable(worker_init):
        raise ValueError(
            "SST_WORKER_INIT must be an import path ('package.module.function'), "
            "not the function itself: the worker processes import it"
        )
    return SSTConfig(
        enabled=get_bool("SST_ENABLED"),
        method=str(get("SST_METHOD")),
        params=dict(params),
        sample_pages=get_int("SST_SAMPLE_PAGES", 1),
        min_fit_pages=get_int("SST_MIN_FIT_PAGES", 1),
        max_model_pages=get_int("SST_MAX_MODEL_PAGES", 1),
        max_held_items=get_int("SST_MAX_HELD_ITEMS", 0),
        max_held_bytes=get_int("SST_MAX_HELD_BYTES", 0),
        hold_timeout=max(0.0, timeout),
        site_key=site_key,
        model_dir=None if model_dir in (None, "") else str(model_dir),
        text_field=text_field,
        format=fmt,
        format_links=get_bool("SST_FORMAT_LINKS"),
        markdown_field=_opt_str(get("SST_MARKDOWN_FIELD")),
        html_field=_opt_str(get("SST_HTML_FIELD")),
        metadata_field=_opt_str(get("SST_METADATA_FIELD")),
        sentences_field=_opt_str(get("SST_SENTENCES_FIELD")),
        blocks_field=_opt_str(get("SST_BLOCKS_FIELD")),
        source_field=_opt_str(get("SST_SOURCE_FIELD")),
        url_field=_opt_str(get("SST_URL_FIELD")),
        threads=get_int("SST_THREADS", 1),
        workers=workers,
        processes=processes,
        worker_init=_opt_str(worker_init),
        max_models=get_int("SST_MAX_MODELS", 0),
    )
