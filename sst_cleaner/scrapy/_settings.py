"""The ``SST_*`` Scrapy settings, described once.

Every setting is a field of :class:`SSTConfig` (the crawl) or :class:`RedisConfig` (the
fleet's shared model store), made by :func:`setting`: the field's metadata holds its
:class:`Setting` (Scrapy name, type, default, meaning and how it is read). The defaults of
both configs, :func:`load_config`, :func:`load_redis_config`, :data:`SETTINGS` and the test
that checks docs/settings.md all come from there, so each default is written once.

Scrapy is imported only to read a plain dict, so the description loads without it.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Callable, Optional, Union

from sst_cleaner.engine._model_io import MAX_MODEL_BYTES

#: the values of SST_FORMAT
FORMATS = ("text", "markdown", "html")

#: reads one setting from a Scrapy ``BaseSettings`` and checks it
Reader = Callable[[Any, "Setting"], Any]


@dataclass(frozen=True)
class Setting:
    """One ``SST_*`` setting. ``type`` and ``default`` are written as docs/settings.md gives
    them (a test compares the two); ``doc`` is its meaning in one line."""

    name: str
    type: str
    default: Any
    doc: str
    read: Reader


#: the key of a config field's metadata that holds its Setting
_SETTING = "sst_setting"
_AS_SETTING: Any = object()


def setting(name: str, type_: str, default: Any, doc: str, read: Reader, *, field_default: Any = _AS_SETTING) -> Any:
    """A config field described by its setting. The field's default is the setting's, unless
    ``field_default`` gives the one a config built directly (without settings) gets."""
    metadata = {_SETTING: Setting(name, type_, default, doc, read)}
    value = default if field_default is _AS_SETTING else field_default
    if isinstance(value, dict):  # a mutable default: each config gets its own copy
        return field(default_factory=lambda: dict(value), metadata=metadata)
    return field(default=value, metadata=metadata)


# -- readers: each gets a BaseSettings and the Setting, so one reader serves many settings --


#: what an optional setting set to "off" reads as on the command line, where ``-s NAME=None``
#: gives the string "None" (compared without case and surrounding blanks)
_OFF_WORDS = ("", "none")


def _is_off(value: Any) -> bool:
    """Whether ``value`` turns an optional setting off: Python's None, or a string that
    ``-s`` makes of it ("None", "none") or of nothing ("")."""
    return value is None or (isinstance(value, str) and value.strip().lower() in _OFF_WORDS)


def _opt_str(value: Any) -> Optional[str]:
    return None if _is_off(value) else str(value).strip()


def _value(settings: Any, spec: Setting) -> Any:
    """The raw value; an explicit None reads as the default (as Scrapy's ``get`` does)."""
    return settings.get(spec.name, spec.default)


def _text(settings: Any, spec: Setting) -> str:
    return str(_value(settings, spec))


def _optional_text(settings: Any, spec: Setting) -> Optional[str]:
    # read by presence: an explicit None (or "None", "") turns the setting off even where
    # its default is on, while get() reads None as unset
    if spec.name not in settings:
        return spec.default
    return _opt_str(settings.get(spec.name))


def _flag(settings: Any, spec: Setting) -> bool:
    # not getbool: it refuses "no", "off", "" and "FALSE", which these settings accept
    value = _value(settings, spec)
    if isinstance(value, str):
        return value.strip().lower() not in ("0", "false", "no", "off", "")
    return bool(value)


def _number(kind: type, minimum: float) -> Reader:
    """A reader of an int or float setting (Scrapy's getint / getfloat) of at least
    ``minimum``, whose errors name the setting."""

    def read(settings: Any, spec: Setting) -> Any:
        getter = settings.getint if kind is int else settings.getfloat
        try:
            value = getter(spec.name, spec.default)
        except (TypeError, ValueError):
            raise ValueError(f"{spec.name} must be a number, got {settings.get(spec.name)!r}") from None
        if value < minimum:
            raise ValueError(f"{spec.name} must be >= {minimum}, got {value}")
        return value

    return read


def _params(settings: Any, spec: Setting) -> dict:
    # not getdict: a blank string means {} here, and a list of pairs is refused
    params = _value(settings, spec)
    if _is_off(params):  # -s SST_PARAMS=None, or =""
        return {}
    if isinstance(params, str):  # -s SST_PARAMS='{"alpha": 0.5}' on the command line
        try:
            params = json.loads(params)
        except ValueError as exc:
            raise ValueError(f"{spec.name} must be a JSON object on the command line, got {params!r}: {exc}") from None
    if hasattr(params, "copy_to_dict"):
        params = params.copy_to_dict()
    if not isinstance(params, dict):
        raise ValueError(f"{spec.name} must be a dict, got {type(params).__name__}")
    return dict(params)


def _hold_timeout(settings: Any, spec: Setting) -> float:
    try:
        timeout = settings.getfloat(spec.name, spec.default)
    except (TypeError, ValueError):
        raise ValueError(f"{spec.name} must be a number of seconds, got {settings.get(spec.name)!r}") from None
    return max(0.0, timeout)


def _site_key(settings: Any, spec: Setting) -> Union[str, Callable[[str], str]]:
    site_key = _value(settings, spec)
    if not callable(site_key) and not isinstance(site_key, str):
        raise ValueError(f"{spec.name} must be 'host', 'domain', a callable or its import path")
    return site_key


def _model_dir(settings: Any, spec: Setting) -> Optional[str]:
    model_dir = _value(settings, spec)
    return None if _is_off(model_dir) else str(model_dir)


def _item_field(settings: Any, spec: Setting) -> str:
    name = _optional_text(settings, spec)
    if name is None:
        raise ValueError(f"{spec.name} must name an item field")
    return name


def _status_field(settings: Any, spec: Setting) -> Optional[str]:
    value = settings.get(spec.name) if spec.name in settings else spec.default
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{spec.name} must be a field name or None, got {value!r}")
    return _optional_text(settings, spec)


def _format(settings: Any, spec: Setting) -> str:
    fmt = _text(settings, spec).strip().lower()
    if fmt not in FORMATS:
        raise ValueError(f"{spec.name} must be one of {', '.join(FORMATS)}, got {_value(settings, spec)!r}")
    return fmt


def _workers(settings: Any, spec: Setting) -> str:
    workers = _text(settings, spec).strip().lower()
    workers = {"processes": "process", "proc": "process", "threads": "thread"}.get(workers, workers)
    if workers not in ("process", "thread"):
        raise ValueError(f"{spec.name} must be 'process' or 'thread', got {_value(settings, spec)!r}")
    if workers == "process" and os.name == "nt":
        # the reactor reads the workers' pipes as file descriptors, which Windows pipes are not
        logging.getLogger(__name__).info("sst: worker processes need POSIX pipes; on Windows the work runs in threads")
        return "thread"
    return workers


def default_processes() -> int:
    """CPUs this process may use, minus one for the reactor (at least 1)."""
    from sst_cleaner.engine._parallel_fit import usable_cpus

    return max(1, usable_cpus() - 1)


def _processes(settings: Any, spec: Setting) -> int:
    if _is_off(_value(settings, spec)):  # the default depends on the machine
        return default_processes()
    return _number(int, 1)(settings, spec)


def _import_path(settings: Any, spec: Setting) -> Optional[str]:
    if callable(_value(settings, spec)):
        raise ValueError(
            f"{spec.name} must be an import path ('package.module.function'), "
            "not the function itself: the worker processes import it"
        )
    return _optional_text(settings, spec)


def _store_url(settings: Any, spec: Setting) -> Optional[str]:
    value = _value(settings, spec)
    if value is False or _is_off(value) or str(value).strip().lower() in ("local", "memory"):
        return None
    if value is True or str(value).strip().lower() == "redis":
        if settings.get("REDIS_URL"):
            return str(settings.get("REDIS_URL"))
        # where scrapy-redis connects (see redis_connection): named in the log
        params = _redis_params(settings)
        host = settings.get("REDIS_HOST") or params.get("host") or "localhost"
        port = settings.get("REDIS_PORT") or params.get("port") or 6379
        db = settings.get("REDIS_DB") or params.get("db") or 0
        return f"redis://{host}:{port}/{db}"
    value = str(value).strip()
    if not value.startswith(("redis://", "rediss://", "unix://")):
        from sst_cleaner.scrapy._redact import redact_url  # the value may hold a password

        raise ValueError(f"{spec.name} must be 'redis' or a redis:// URL, got {redact_url(value)!r}")
    return value


#: the names a namespace template may use (SST_REDIS_NAMESPACE)
NAMESPACE_FIELDS = ("project", "spider")


def _namespace(settings: Any, spec: Setting) -> str:
    template = _text(settings, spec)
    try:
        template % {name: "x" for name in NAMESPACE_FIELDS}
    except (KeyError, ValueError, TypeError) as exc:
        raise ValueError(
            f"{spec.name} must be a template of %(project)s and %(spider)s, got {template!r}: {exc!r}"
        ) from None
    return template


def namespace_of(template: str, project: Optional[str], spider: Optional[str]) -> str:
    """The namespace ``template`` names for a crawl, as a key part: characters that are not
    a word, ``.``, ``:`` or ``-`` become ``_`` (a ``{`` would change the key's hash slot, a
    space or newline the key), and a long one is cut and completed by its hash so two long
    names stay apart."""
    import hashlib

    value = template % {"project": project or "", "spider": spider or ""}
    safe = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "._:-") else "_" for ch in value)
    if len(safe) > 120:
        safe = safe[:100] + "~" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return safe


#: scrapy-redis's connection settings (scrapy_redis.connection.SETTINGS_PARAMS_MAP and
#: REDIS_PARAMS), read when SST_MODEL_STORE = "redis"
REDIS_CONNECTION_SETTINGS = ("REDIS_URL", "REDIS_HOST", "REDIS_PORT", "REDIS_DB", "REDIS_ENCODING")


def _redis_params(settings: Any) -> dict:
    try:
        return dict(settings.getdict("REDIS_PARAMS"))  # a JSON string on the command line, as scrapy-redis reads it
    except (TypeError, ValueError):
        raise ValueError("REDIS_PARAMS must be a dict (or its JSON)") from None


def redis_connection(settings: Any) -> Optional[dict]:
    """scrapy-redis's connection settings when ``SST_MODEL_STORE = "redis"``, else None."""
    value = settings.get("SST_MODEL_STORE")
    if not (value is True or str(value).strip().lower() == "redis"):
        return None
    out: dict[str, Any] = {name: settings.get(name) for name in REDIS_CONNECTION_SETTINGS if settings.get(name)}
    out["REDIS_PARAMS"] = _redis_params(settings)
    return out


def _key_prefix(settings: Any, spec: Setting) -> str:
    prefix = _text(settings, spec).strip()
    if not prefix or any(ch in prefix for ch in "{}\r\n "):
        raise ValueError(f"{spec.name} must be a non-empty word, got {prefix!r}")
    return prefix


# -- the description ------------------------------------------------------------------------


@dataclass(frozen=True)
class SSTConfig:
    """The parsed ``SST_*`` settings of one crawl."""

    enabled: bool = setting(
        "SST_ENABLED", "bool", True, "False makes the add-on, middleware and pipeline raise NotConfigured", _flag
    )
    method: str = setting("SST_METHOD", "str", "default", "cleaning method (sst_cleaner.available_methods())", _text)
    params: dict = setting(
        "SST_PARAMS", "dict", {}, "keyword arguments of the method; JSON on the command line", _params
    )
    sample_pages: int = setting(
        "SST_SAMPLE_PAGES", "int", 20, "pages of a site to learn from before its items are released", _number(int, 1)
    )
    min_fit_pages: int = setting(
        "SST_MIN_FIT_PAGES", "int", 2, "fewer pages than this: page-level fallback instead of a model", _number(int, 1)
    )
    max_model_pages: int = setting(
        "SST_MAX_MODEL_PAGES", "int", 200, "later pages refine the model until it has seen this many", _number(int, 1)
    )
    max_held_items: int = setting(
        "SST_MAX_HELD_ITEMS", "int", 10_000, "cap on held items, all sites together", _number(int, 0)
    )
    max_held_bytes: int = setting(
        "SST_MAX_HELD_BYTES", "int", 64 * 1024 * 1024, "cap on held page bytes, all sites together", _number(int, 0)
    )
    hold_timeout: float = setting(
        "SST_HOLD_TIMEOUT",
        "float (seconds)",
        120.0,
        "seconds a site may gather its sample before it is fitted",
        _hold_timeout,
    )
    site_key: Union[str, Callable[[str], str]] = setting(
        "SST_SITE_KEY", "str or callable", "host", "what a site is: 'host', 'domain', a callable or its path", _site_key
    )
    model_dir: Optional[str] = setting(
        "SST_MODEL_DIR", "str (path) or None", None, "folder site models are loaded from and saved to", _model_dir
    )
    text_field: str = setting("SST_TEXT_FIELD", "str", "text", "item field for the clean content", _item_field)
    #: what SST_TEXT_FIELD gets: "text", "markdown" or "html" (see sst_cleaner.engine._formats)
    format: str = setting("SST_FORMAT", "str", "text", "what SST_TEXT_FIELD gets: text, markdown or html", _format)
    format_links: bool = setting("SST_FORMAT_LINKS", "bool", False, "keep links in the Markdown and HTML", _flag)
    markdown_field: Optional[str] = setting(
        "SST_MARKDOWN_FIELD", "str or None", None, "item field for the Markdown as well", _optional_text
    )
    html_field: Optional[str] = setting(
        "SST_HTML_FIELD", "str or None", None, "item field for the minimal safe HTML as well", _optional_text
    )
    metadata_field: Optional[str] = setting(
        "SST_METADATA_FIELD", "str or None", None, "item field for the page's metadata", _optional_text
    )
    sentences_field: Optional[str] = setting(
        "SST_SENTENCES_FIELD", "str or None", None, "item field for the informative sentences", _optional_text
    )
    blocks_field: Optional[str] = setting(
        "SST_BLOCKS_FIELD", "str or None", None, "item field for the informative blocks", _optional_text
    )
    source_field: Optional[str] = setting(
        "SST_SOURCE_FIELD",
        "str or None",
        None,
        "item field whose HTML is cleaned instead of the response",
        _optional_text,
    )
    url_field: Optional[str] = setting(
        "SST_URL_FIELD", "str", "url", "item field with the page URL, for SST_SOURCE_FIELD items", _optional_text
    )
    threads: int = setting("SST_THREADS", "int", 2, "worker threads for fitting and cleaning", _number(int, 1))
    workers: str = setting(
        "SST_WORKERS", "str", "process", "where fitting and cleaning run: process or thread", _workers
    )
    # the setting's None means CPUs - 1, decided when the settings are read
    processes: int = setting(
        "SST_PROCESSES", "int or None", None, "worker processes (None: CPUs - 1)", _processes, field_default=1
    )
    worker_init: Optional[str] = setting(
        "SST_WORKER_INIT", "str (import path) or None", None, "function each worker process calls first", _import_path
    )
    worker_hang_timeout: float = setting(
        "SST_WORKER_HANG_TIMEOUT",
        "float (seconds)",
        600.0,
        "seconds a worker process may answer nothing while calls wait before it is stopped (0: never)",
        _number(float, 0.0),
    )
    max_models: int = setting(
        "SST_MAX_MODELS",
        "int",
        1000,
        "site models each worker process, and the Scrapy process for its copies, keeps in memory (0: all)",
        _number(int, 0),
    )
    explain_dir: Optional[str] = setting(
        "SST_EXPLAIN_DIR",
        "str (path) or None",
        None,
        "folder the crawl's explain report (why each block was kept) is written to at the close",
        _model_dir,
    )
    explain_pages: int = setting(
        "SST_EXPLAIN_PAGES", "int", 5, "pages of each site in the explain report (the first cleaned)", _number(int, 1)
    )
    status_field: Optional[str] = setting(
        "SST_STATUS_FIELD",
        "str or None",
        "sst_status",
        "item field for the cleaning outcome (None: off)",
        _status_field,
    )


@dataclass(frozen=True)
class RedisConfig:
    """The parsed fleet settings of one crawl. Read only when ``SST_MODEL_STORE`` is set, so
    a crawl without a fleet never checks the others."""

    # no field default: a fleet config always has a URL (without one load_redis_config gives None)
    url: str = setting(
        "SST_MODEL_STORE",
        "str or None",
        None,
        "Redis URL (or 'redis') of the fleet's models",
        _store_url,
        field_default=MISSING,
    )
    prefix: str = setting(
        "SST_REDIS_PREFIX", "str", "sst", "first part of every key the shared store writes", _key_prefix
    )
    #: a config built directly (tests, tools) has no namespace; load_redis_config fills it in
    namespace: str = setting(
        "SST_REDIS_NAMESPACE",
        "str",
        "%(project)s:%(spider)s",
        "second part of every key: crawls of other projects or spiders never share models",
        _namespace,
        field_default="",
    )
    site_sample_bytes: int = setting(
        "SST_REDIS_SITE_SAMPLE_BYTES",
        "int",
        16 * 1024 * 1024,
        "cap on a site's shared sample (page bytes)",
        _number(int, 1),
    )
    total_sample_bytes: int = setting(
        "SST_REDIS_TOTAL_SAMPLE_BYTES", "int", 256 * 1024 * 1024, "cap on all shared samples together", _number(int, 1)
    )
    sample_ttl: float = setting(
        "SST_REDIS_SAMPLE_TTL", "float (seconds)", 3600.0, "seconds a shared sample lives", _number(float, 1.0)
    )
    model_ttl: float = setting(
        "SST_REDIS_MODEL_TTL",
        "float (seconds)",
        7 * 24 * 3600.0,
        "seconds a published model lives",
        _number(float, 1.0),
    )
    lock_ttl: float = setting(
        "SST_REDIS_LOCK_TTL",
        "float (seconds)",
        5.0,
        "seconds a builder's lock lives unless renewed",
        _number(float, 0.5),
    )
    timeout: float = setting(
        "SST_REDIS_TIMEOUT", "float (seconds)", 2.0, "socket timeout of every Redis call", _number(float, 0.05)
    )
    wait: float = setting(
        "SST_REDIS_WAIT", "float (seconds)", 300.0, "seconds to wait for another build", _number(float, 0.0)
    )
    max_model_bytes: int = setting(
        "SST_REDIS_MAX_MODEL_BYTES", "int", MAX_MODEL_BYTES, "bigger shared models are rejected unread", _number(int, 1)
    )
    merge_pages: int = setting(
        "SST_REDIS_MERGE_PAGES", "int", 10, "later pages learnt per merge into the fleet's model", _number(int, 0)
    )
    merge_seconds: float = setting(
        "SST_REDIS_MERGE_SECONDS",
        "float (seconds)",
        5.0,
        "a site's later pages wait at most this long for a merge",
        _number(float, 0.05),
    )
    #: with ``SST_MODEL_STORE = "redis"``: scrapy-redis's connection settings (REDIS_URL,
    #: REDIS_HOST, REDIS_PORT, REDIS_DB, REDIS_ENCODING, REDIS_PARAMS), so the store reaches
    #: the server and db scrapy-redis does; None for a URL of its own. Not a setting of ours;
    #: kept out of repr (REDIS_PARAMS may hold a password).
    connection: Optional[dict] = field(default=None, repr=False, compare=False)

    def secrets(self) -> list[str]:
        """The secrets of the connection settings (a URL's are found in the URL)."""
        params = (self.connection or {}).get("REDIS_PARAMS") or {}
        return [str(params[k]) for k in ("password", "username") if params.get(k)]


#: every setting of the Scrapy layer by name, in the order of the two configs
SETTINGS: dict[str, Setting] = {
    f.metadata[_SETTING].name: f.metadata[_SETTING]
    for config in (SSTConfig, RedisConfig)
    for f in fields(config)
    if _SETTING in f.metadata
}


# -- reading --------------------------------------------------------------------------------


def _as_settings(settings: Any) -> Any:
    """``settings`` as a Scrapy ``BaseSettings``, for its typed getters: a plain dict (tests,
    tools) is wrapped, and anything without ``get`` reads as no settings at all."""
    if hasattr(settings, "getint"):
        return settings
    from scrapy.settings import BaseSettings

    return BaseSettings(dict(settings) if hasattr(settings, "get") else None)


def _read(config: type, settings: Any) -> dict[str, Any]:
    """The values of ``config``'s fields, each read by its setting."""
    specs = [(f.name, f.metadata[_SETTING]) for f in fields(config) if _SETTING in f.metadata]
    return {name: spec.read(settings, spec) for name, spec in specs}


def load_config(settings: Any) -> SSTConfig:
    """Read the ``SST_*`` settings (a Scrapy ``Settings`` or a plain dict).

    Raises ``ValueError`` with the offending setting's name on a bad value, so a typo
    stops the crawl at start-up instead of half-way through.
    """
    return SSTConfig(**_read(SSTConfig, _as_settings(settings)))


def enabled(settings: Any) -> bool:
    """``SST_ENABLED`` alone (the other settings are not checked)."""
    spec = SETTINGS["SST_ENABLED"]
    return bool(spec.read(_as_settings(settings), spec))


def component_config(settings: Any) -> SSTConfig:
    """The configuration a component (middleware, pipeline) starts with: a bad value stops
    the crawl with the setting's name, and ``SST_ENABLED = False`` turns the component off
    (Scrapy's ``NotConfigured``)."""
    from scrapy.exceptions import NotConfigured

    try:
        config = load_config(settings)
    except ValueError as exc:
        raise ValueError(f"sst-cleaner: {exc}") from exc
    if not config.enabled:
        raise NotConfigured("SST_ENABLED is False")
    return config


def store_url(settings: Any) -> Optional[str]:
    """The Redis URL ``SST_MODEL_STORE`` names, or None (the in-process store).

    ``"redis"`` (or ``True``) means scrapy-redis's server: its ``REDIS_URL``, or its
    ``REDIS_HOST``/``REDIS_PORT``/``REDIS_DB`` (``redis://localhost:6379/0`` when none is
    set), so a fleet that already has a Redis for its scheduler names it once. (The URL
    returned then only names the server in the log: the connection is made from all of
    scrapy-redis's settings, ``REDIS_PARAMS`` included, see ``RedisConfig.connection``.)
    """
    return _store_url(_as_settings(settings), SETTINGS["SST_MODEL_STORE"])


def load_redis_config(settings: Any, spider: Optional[str] = None) -> Optional[RedisConfig]:
    """The fleet settings, or None when ``SST_MODEL_STORE`` is not set. ``spider`` (the
    spider's name) and ``BOT_NAME`` fill in the namespace template."""
    settings = _as_settings(settings)
    if store_url(settings) is None:
        return None
    values = _read(RedisConfig, settings)
    values["namespace"] = namespace_of(values["namespace"], _opt_str(settings.get("BOT_NAME")), spider)
    return RedisConfig(**values, connection=redis_connection(settings))


def outputs_of(config: SSTConfig) -> tuple:
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
