"""Command line for stored pages and crawls (no Scrapy needed).

    sst-cleaner site PAGES... [-o out.jsonl]        learn each site of the pages, clean every page
    sst-cleaner fit PAGES... --model site.json      learn one site model and save it
    sst-cleaner clean PAGES... [--model site.json]  clean with a saved model (none: page by page)
    sst-cleaner explain PAGES... -o report.html     why each block was kept or removed (HTML)
    sst-cleaner methods                             list the cleaning methods
    sst-cleaner --version

PAGES are HTML files, WARC archives (``.warc``, ``.warc.gz``: their HTML responses),
folders (searched recursively for both), or ``-`` for standard input (HTML or WARC).
``site`` learns one model per site: a WARC's responses are grouped by host, the other
pages of the command are one site. Output (``--format``): ``json`` (default), JSON
Lines with one object per page; ``text``, ``markdown`` or ``html``, the pages one after
the other, each under a ``==> name <==`` line (``<!-- name -->`` in HTML) when there are
several. A progress line goes to standard error when it is a terminal.

Exit codes: 0 every page was cleaned; 1 some pages could not be read or cleaned (the
others were written; each failure is on standard error); 2 bad command line, or no page
found; 3 the model file could not be read or written; 130 interrupted (Ctrl-C); 141 the
output was closed early (``| head``).
"""

from __future__ import annotations

import argparse
import html
import io
import json
import os
import stat
import sys
from collections import Counter
from typing import Iterable, Iterator, NamedTuple, Optional

from sst_cleaner import ENGINE_BUILD, __version__
from sst_cleaner.cli._render import RenderUnavailable, add_render_options, render_pages
from sst_cleaner.engine._cleaner import SiteCleaner
from sst_cleaner.engine._registry import DEFAULT_METHOD, available_methods

EXIT_OK, EXIT_PAGE_ERRORS, EXIT_USAGE, EXIT_MODEL, EXIT_BROKEN_PIPE = 0, 1, 2, 3, 141
HTML_SUFFIXES = (".html", ".htm", ".xhtml")
WARC_SUFFIXES = (".warc", ".warc.gz", ".arc.gz")
FORMATS = ("json", "text", "markdown", "html")


class Page(NamedTuple):
    name: str  # the file path, or the URL of a WARC record
    url: Optional[str]
    body: bytes
    encoding: Optional[str]
    site: str  # what `site` learns one model for


class UsageError(Exception):
    pass


def _walk(path: str) -> Iterator[str]:
    """Files under a folder, recursively, sorted, that are HTML or WARC."""
    for folder, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            if name.lower().endswith(HTML_SUFFIXES + WARC_SUFFIXES):
                yield os.path.join(folder, name)


def _sources(paths: Iterable[str]) -> Iterator[str]:
    for path in paths:
        if path == "-" or os.path.isfile(path):
            yield path
        elif os.path.isdir(path):
            yield from _walk(path)
        else:
            raise UsageError(f"no such file or folder: {path}")


def read_pages(paths: Iterable[str], errors: list, report: bool = True) -> Iterator[Page]:
    """Every page of ``paths`` (see the module docstring); a file or archive that cannot
    be read is reported in ``errors`` (and on standard error, unless ``report`` is false:
    a second pass over the same inputs) and skipped."""
    from sst_cleaner.cli._warc import MAX_BODY_BYTES, WarcError, is_warc, read_warc
    from sst_cleaner.scrapy._site_keys import host_key

    for src in _sources(paths):
        try:
            data = _read_stdin() if src == "-" else None
            if data is None and not stat.S_ISREG(os.stat(src).st_mode):
                raise OSError("not a regular file (a FIFO, device or directory); skipped")
            head = data[:4096] if data is not None else _head(src)
            name = "<stdin>" if src == "-" else src
            if is_warc(head):
                stream = io.BytesIO(data) if data is not None else src
                skipped: Counter = Counter()
                try:
                    for rec in read_warc(stream, MAX_BODY_BYTES, skipped):
                        yield Page(rec.url or name, rec.url or None, rec.body, rec.encoding, host_key(rec.url))
                finally:
                    if skipped and report:
                        counts = ", ".join(f"{n} {status}" for status, n in sorted(skipped.items()))
                        print(f"sst-cleaner: {name}: skipped {counts}", file=sys.stderr)
            else:
                body = data if data is not None else _read(src)
                reason = _not_html(src, body)
                if reason:
                    raise OSError(f"not_html ({reason}); skipped, never fitted on")
                yield Page(name, None, body, None, "")
        except (OSError, WarcError) as exc:
            errors.append(f"{src}: {exc}")
            if report:
                print(f"sst-cleaner: {src}: {exc}", file=sys.stderr)


#: the first bytes of formats that are never a page, whatever their file name says
BINARY_MAGIC = (b"%PDF", b"\x89PNG", b"GIF8", b"\xff\xd8\xff", b"PK\x03\x04", b"\x1f\x8b", b"\x7fELF")


def _not_html(src: str, body: bytes) -> str:
    """Why ``body`` is not a page ('' if it may be one): a file named on the command
    line without an HTML suffix (a ``.css``), or bytes of a known binary format or with
    NUL bytes (a PDF saved as ``.html``; UTF-16 pages start with a byte order mark)."""
    if src != "-" and not src.lower().endswith(HTML_SUFFIXES):
        return "not an HTML file name"
    head = body[:1024].lstrip()
    if head.startswith(BINARY_MAGIC):
        return "binary content"
    if b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "binary content"
    return ""


def _read_stdin() -> bytes:
    """Standard input: at most the engine's page cap, plus one byte to tell an over-cap
    page from one exactly at the cap. A WARC archive is read on (its records are capped
    by the WARC reader); an HTML page over the cap is refused as an ``OSError``."""
    from sst_cleaner.cli._warc import is_warc
    from sst_cleaner.engine._limits import Limits

    cap = Limits().max_page_bytes
    data = sys.stdin.buffer.read(cap + 1)
    if is_warc(data[:4096]):
        return data + sys.stdin.buffer.read()
    if len(data) > cap:
        raise OSError(f"standard input is over the {cap} byte page limit; skipped")
    return data


def _head(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(4096)  # a gzip member gives its first bytes only from a whole deflate block


def _read(path: str) -> bytes:
    """A page file: regular, at most the engine's page cap, with the model files' reader."""
    from sst_cleaner.engine._limits import Limits
    from sst_cleaner.engine._model_file import read_model_bytes

    return read_model_bytes(path, Limits().max_page_bytes, what="page file", error=OSError, follow=True)


class Progress:
    """``[k/n] name`` on one line of standard error, only when it is a terminal."""

    def __init__(self, total: int, enabled: Optional[bool] = None):
        self.total = total
        self.enabled = sys.stderr.isatty() if enabled is None else enabled

    def step(self, k: int, name: str) -> None:
        if self.enabled:
            sys.stderr.write(f"\r\x1b[K[{k}/{self.total}] {printable_name(name)[-60:]}")
            sys.stderr.flush()

    def done(self) -> None:
        if self.enabled:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def printable_name(name: str) -> str:
    """``name`` safe to write anywhere: the bytes of a file name that is not UTF-8
    (held as surrogates by ``os.fsdecode``) as ``\\xNN``, and control characters
    (newlines, ANSI escapes) as ``\\xNN`` too, so a name can neither fail the output
    encoding, forge a ``==> name <==`` line nor drive a terminal."""
    raw = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in raw)


def _comment_name(name: str) -> str:
    """A name inside ``<!-- -->``: escaped so it cannot close the comment."""
    return html.escape(printable_name(name)).replace("--", "-&#45;")


def _render(page: Page, result, fmt: str, links: bool, sentences: bool) -> str:
    if fmt == "text":
        return result.text
    if fmt == "markdown":
        return result.as_markdown(links)
    if fmt == "html":
        return result.as_html(links)
    result.source = (page.url, page.body, page.encoding)
    row = {"url": printable_name(page.url)} if page.url else {"path": printable_name(page.name)}
    row.update(
        title=result.title,
        status=result.status,
        text=result.text,
        markdown=result.as_markdown(links),
        html=result.as_html(links),
        metadata=result.metadata,
    )
    if sentences:
        row["sentences"] = result.sentences
    return json.dumps(row, ensure_ascii=False)


def _write(out, page: Page, text: str, fmt: str, several: bool) -> None:
    if fmt != "json" and several:
        name = _comment_name(page.name) if fmt == "html" else printable_name(page.name)
        out.write(f"<!-- {name} -->\n" if fmt == "html" else f"==> {name} <==\n")
    out.write(text + "\n")
    if fmt != "json" and several:
        out.write("\n")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="sst-cleaner",
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--version", action="version", version=f"sst-cleaner {__version__} ({ENGINE_BUILD} engine)")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    common, out, jobs = _common_options(), _output_options(), _jobs_option()
    add_render_options(out)
    sub.add_parser(
        "site",
        parents=[common, out, jobs],
        help="learn each site of the pages, clean every page",
        description="Learn one model per site of the pages (a WARC's responses by host; other "
        "pages together) and clean every page with its site's model.",
    )
    p = sub.add_parser(
        "fit",
        parents=[common, jobs],
        help="learn a site model and save it",
        description="Learn one site model from the pages and save it as JSON.",
    )
    p.add_argument("--model", required=True, help="model file to write")
    p = sub.add_parser(
        "clean",
        parents=[common, out],
        help="clean pages with a saved model",
        description="Clean pages with a saved site model, or page by page without one.",
    )
    p.add_argument("--model", help="model file written by `fit` (none: page-level cleaning)")
    from sst_cleaner.cli import _explain

    _explain.add_parser(sub, [common, jobs])
    sub.add_parser("methods", help="list the cleaning methods")
    return ap


def _common_options() -> argparse.ArgumentParser:
    """The pages and the method: every command but ``methods`` takes them."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "pages",
        nargs="+",
        metavar="PAGES",
        help="HTML files, WARC archives, folders (recursive) or - for standard input",
    )
    common.add_argument("--method", default=DEFAULT_METHOD, help="cleaning method (see `sst-cleaner methods`)")
    return common


def _output_options() -> argparse.ArgumentParser:
    """Where and how the cleaned pages are written (``site`` and ``clean``)."""
    out = argparse.ArgumentParser(add_help=False)
    out.add_argument("-o", "--output", help="write here instead of standard output")
    out.add_argument(
        "--format",
        choices=FORMATS,
        default="json",
        help="json (JSON Lines: title, status, text, markdown, html, metadata), or one page format",
    )
    out.add_argument("--links", action="store_true", help="keep links in the Markdown and HTML")
    out.add_argument("--sentences", action="store_true", help="json: add the informative sentences")
    out.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress on standard error (default: when it is a terminal)",
    )
    return out


def _jobs_option() -> argparse.ArgumentParser:
    """The processes a fit may use (``site`` and ``fit``)."""
    jobs = argparse.ArgumentParser(add_help=False)
    jobs.add_argument(
        "--jobs",
        type=int,
        default=-1,
        help="processes to learn a site on (default -1: every CPU, for sites with enough "
        "HTML to be worth it, see sst_cleaner.engine._parallel_fit)",
    )
    return jobs


def main(argv: Optional[list[str]] = None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    if args.command is None:
        ap.print_help(sys.stderr)
        return EXIT_USAGE
    if args.command == "methods":
        print("\n".join(available_methods()))
        return EXIT_OK
    if getattr(args, "method", DEFAULT_METHOD) not in available_methods():
        ap.error(f"unknown --method {args.method!r} (choose from {', '.join(available_methods())})")
    if getattr(args, "jobs", -1) == 0 or getattr(args, "jobs", -1) < -1:
        ap.error("--jobs must be a positive number or -1")
    try:
        return _run(args)
    except (UsageError, RenderUnavailable) as exc:
        print(f"sst-cleaner: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as SIGPIPE would
        try:  # so the interpreter's final flush of stdout cannot fail again
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (AttributeError, OSError, ValueError):  # stdout was closed before the start
            pass
        return EXIT_BROKEN_PIPE


# `site` learns each site from its first pages and cleans every page in a second pass
# over the inputs, so a crawl of any size is never held whole: what is held is the
# sample, bounded both per site and in total
SITE_SAMPLE_PAGES = 500
SAMPLE_BYTES = 96 * 1024 * 1024


def _run(args) -> int:
    from sst_cleaner.engine._model_io import ModelFormatError

    if args.command == "explain":
        from sst_cleaner.cli._explain import run

        return run(args)
    errors: list = []
    if args.command == "fit" or "-" in args.pages:
        # fit learns from every page; standard input cannot be read twice
        listed = list(read_pages(args.pages, errors))
        pages = lambda: iter(listed)  # noqa: E731
    else:
        pages = lambda: read_pages(args.pages, [], report=False)  # noqa: E731
        first = read_pages(args.pages, errors)
    if args.command == "fit":
        if not listed:
            raise UsageError("no HTML page found in " + " ".join(args.pages))
        cleaner = SiteCleaner(method=args.method).fit([(p.url, p.body, p.encoding) for p in listed], n_jobs=args.jobs)
        try:
            cleaner.save(args.model)
        except OSError as exc:
            print(f"sst-cleaner: cannot write {args.model}: {exc}", file=sys.stderr)
            return EXIT_MODEL
        print(f"learnt {cleaner.n_pages} pages -> {args.model}", file=sys.stderr)
        if cleaner.model_full_pages:
            print(
                f"sst-cleaner: the site model is full (its entry cap): {cleaner.model_full_pages} pages not learnt",
                file=sys.stderr,
            )
        return EXIT_PAGE_ERRORS if errors else EXIT_OK
    samples, total = _sample_sites(pages() if "-" in args.pages else first)
    if not total:
        raise UsageError("no HTML page found in " + " ".join(args.pages))
    if args.command == "site":
        cleaners = _fit_sites(samples, args.method, args.jobs)
    else:
        try:
            model = SiteCleaner.load(args.model) if args.model else SiteCleaner(method=args.method)
        except ModelFormatError as exc:
            print(f"sst-cleaner: {exc}", file=sys.stderr)
            return EXIT_MODEL
        cleaners = dict.fromkeys(samples, model)
    del samples
    failed = _clean_all(render_pages(pages(), args), total, cleaners, args)
    return EXIT_PAGE_ERRORS if errors or failed else EXIT_OK


def _sample_sites(pages: Iterable[Page]) -> tuple[dict, int]:
    """Each site's first pages (at most SITE_SAMPLE_PAGES, SAMPLE_BYTES in all) and the
    number of pages read."""
    samples: dict = {}
    held = total = 0
    for p in pages:
        total += 1
        group = samples.setdefault(p.site, [])
        if len(group) < SITE_SAMPLE_PAGES and held + len(p.body) <= SAMPLE_BYTES:
            group.append((p.url, p.body, p.encoding))
            held += len(p.body)
    return samples, total


def _fit_sites(samples: dict, method: str, jobs: int) -> dict:
    return {site: SiteCleaner(method=method).fit(group, n_jobs=jobs) for site, group in samples.items()}


def _clean_all(pages: Iterable[Page], total: int, cleaners: dict, args) -> int:
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    if out is None:  # started with standard output closed (`>&-`): as a closed pipe
        raise BrokenPipeError("standard output is closed")
    progress = Progress(total, args.progress)
    failed = 0
    try:
        for k, page in enumerate(pages, 1):
            progress.step(k, page.name)
            try:
                result = cleaners[page.site].clean((page.url, page.body, page.encoding))
                text = _render(page, result, args.format, args.links, args.sentences)
            except Exception as exc:  # one broken page never stops the run
                failed += 1
                progress.done()
                print(f"sst-cleaner: {page.name}: {exc!r}", file=sys.stderr)
                continue
            _write(out, page, text, args.format, total > 1)
    finally:
        progress.done()
        if out is not sys.stdout:
            out.close()
    return failed


if __name__ == "__main__":
    sys.exit(main())
