"""Command line for stored pages and crawls (no Scrapy needed).

    sst-cleaner site PAGES... [-o out.jsonl]        learn each site of the pages, clean every page
    sst-cleaner fit PAGES... --model site.json      learn one site model and save it
    sst-cleaner clean PAGES... [--model site.json]  clean with a saved model (none: page by page)
    sst-cleaner explain PAGES... -o report.html     why each block was kept or removed (HTML)
    sst-cleaner methods                             list the cleaning methods
    sst-cleaner --version

PAGES are HTML files, WARC archives (``.warc``, ``.warc.gz``: their HTML responses),
folders (searched recursively for both; symbolic links in them are not followed), or
``-`` for standard input (HTML or WARC; spooled to a temporary file).
``site`` learns one model per site: a WARC's responses are grouped by host, the other
pages of the command are one site. Output (``--format``): ``json`` (default), JSON
Lines with one object per page; ``text``, ``markdown`` or ``html``, the pages one after
the other, each under a ``==> name <==`` line (``<!-- name -->`` in HTML) when there are
several. A progress line goes to standard error when it is a terminal. ``fit`` prints
one line: the pages learnt, and those not learnt and why.

Exit codes: 0 every page was cleaned; 1 some pages could not be read or cleaned (the
others were written; each failure is on standard error); 2 bad command line (an output
that cannot be opened too), or no page found; 3 the model file could not be read or
written; 130 interrupted (Ctrl-C); 141 the output was closed early (``| head``).
"""

from __future__ import annotations

import argparse
import errno
import html
import io
import json
import os
import re
import stat
import sys
import tempfile
from collections import Counter
from typing import BinaryIO, Iterable, Iterator, NamedTuple, Optional

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


def _walk(path: str) -> Iterator[tuple[str, str]]:
    """(path, why it is not read or '') of the files under a folder, recursively,
    sorted, that are HTML or WARC. Symbolic links met on the way are not followed (as
    ``grep -r`` does not): a folder from elsewhere cannot make the command read a file
    outside it; each one is reported. A folder that cannot be listed is reported too."""
    errors: list = []
    for folder, dirs, files in os.walk(path, onerror=errors.append):
        while errors:
            exc = errors.pop()
            yield exc.filename or folder, f"cannot list the folder: {exc.strerror or exc}; skipped"
        dirs.sort()
        for name in sorted(dirs):
            if os.path.islink(os.path.join(folder, name)):
                yield os.path.join(folder, name), SYMLINK_IN_FOLDER
        for name in sorted(files):
            if name.lower().endswith(HTML_SUFFIXES + WARC_SUFFIXES):
                yield os.path.join(folder, name), ""
    for exc in errors:
        yield exc.filename or path, f"cannot list the folder: {exc.strerror or exc}; skipped"


SYMLINK_IN_FOLDER = "a symbolic link inside a folder is not followed (name it on the command line to read it); skipped"


def _sources(paths: Iterable[str]) -> Iterator[tuple[str, bool, str]]:
    """(path, found in a folder, why it is not read or '') of every input."""
    for path in paths:
        if path == "-":
            yield path, False, ""
        elif os.path.isdir(path):
            for found, why in _walk(path):
                yield found, True, why
        elif os.path.lexists(path) and os.path.exists(path):
            yield path, False, ""  # a FIFO or device too: opening it says what it is
        else:
            raise UsageError(f"no such file or folder: {printable_name(path)}")


class StdinSpool(NamedTuple):
    """Standard input, read once into a temporary file that every pass reads again."""

    file: BinaryIO
    warc: bool
    over: str  # why the input was not read to its end ('' when it was)


#: standard input holding a WARC archive is spooled to a temporary file up to this size
MAX_STDIN_BYTES = 4 << 30
_CHUNK = 1 << 20


def spool_stdin(max_stdin_bytes: Optional[int] = None) -> StdinSpool:
    """Read standard input into an unnamed temporary file, in chunks (bounded memory):
    an HTML page up to the engine's page cap plus one byte (to tell a page over the cap
    from one exactly at it), a WARC archive up to ``max_stdin_bytes``
    (:data:`MAX_STDIN_BYTES`); what is past the cap is left unread and said in ``over``."""
    from sst_cleaner.cli._warc import is_warc
    from sst_cleaner.engine._limits import Limits

    page_cap = Limits().max_page_bytes
    warc_cap = MAX_STDIN_BYTES if max_stdin_bytes is None else max_stdin_bytes
    stream = sys.stdin.buffer if sys.stdin is not None else io.BytesIO()
    spool = tempfile.TemporaryFile(prefix="sst-cleaner-stdin-")
    head = stream.read(4096) or b""
    warc = is_warc(head)
    cap = warc_cap if warc else page_cap
    spool.write(head)
    total = len(head)
    while total <= cap:
        chunk = stream.read(min(_CHUNK, cap + 1 - total))
        if not chunk:
            break
        spool.write(chunk)
        total += len(chunk)
    over = ""
    if total > cap:
        spool.truncate(cap)
        if warc:
            over = (
                f"standard input is over the {cap} byte limit of a WARC archive read from it: the records "
                "past it were not read (save the archive to a file and name the file)"
            )
        else:
            over = f"standard input is over the {cap} byte page limit; skipped"
    spool.flush()
    return StdinSpool(spool, warc, over)


def read_pages(
    paths: Iterable[str],
    errors: list,
    report: bool = True,
    stdin: Optional[StdinSpool] = None,
    skips: Optional[Counter] = None,
) -> Iterator[Page]:
    """Every page of ``paths`` (see the module docstring); a file or archive that cannot
    be read is reported in ``errors`` (and on standard error, unless ``report`` is false:
    a second pass over the same inputs) and skipped. ``-`` is ``stdin`` (see
    :func:`spool_stdin`); ``skips`` counts the WARC records skipped, by status."""
    from sst_cleaner.cli._warc import MAX_BODY_BYTES, WarcError, is_warc, read_warc
    from sst_cleaner.scrapy._site_keys import host_key

    for src, walked, why in _sources(paths):
        name = "<stdin>" if src == "-" else src
        fh: Optional[BinaryIO] = None
        try:
            if why:
                raise OSError(why)
            if src == "-":
                if stdin is None:
                    raise OSError("standard input was not read; skipped")
                fh = stdin.file
                fh.seek(0)
            else:
                fh = _open_page_file(src, follow=not walked)
            head = fh.read(4096)  # a gzip member gives its first bytes only from a whole deflate block
            fh.seek(0)
            if is_warc(head):
                skipped: Counter = Counter()
                try:
                    for rec in read_warc(fh, MAX_BODY_BYTES, skipped):
                        yield Page(rec.url or name, rec.url or None, rec.body, rec.encoding, host_key(rec.url))
                finally:
                    if skips is not None:
                        skips.update(skipped)
                    if skipped and report:
                        counts = ", ".join(f"{n} {status}" for status, n in sorted(skipped.items()))
                        print(f"sst-cleaner: {printable_name(name)}: skipped {counts}", file=sys.stderr)
                if src == "-" and stdin is not None and stdin.over:
                    raise OSError(stdin.over)
            else:
                if src == "-" and stdin is not None and stdin.over:
                    raise OSError(stdin.over)
                body = _read_capped(fh)
                reason = _not_html(src, body)
                if reason:
                    raise OSError(f"not_html ({reason}); skipped, never fitted on")
                yield Page(name, None, body, None, "")
        except (OSError, WarcError) as exc:
            errors.append(f"{printable_name(src)}: {exc}")
            if report:
                print(f"sst-cleaner: {printable_name(name)}: {exc}", file=sys.stderr)
        finally:
            if fh is not None and src != "-":
                fh.close()


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


def _open_page_file(path: str, follow: bool) -> BinaryIO:
    """``path`` opened for reading if it is a regular file. Opened non-blocking (a FIFO
    without a writer cannot hang the open) and checked once open (``fstat``: a FIFO, a
    device, a directory, or a symlink to one, is refused); ``follow`` false refuses a
    symbolic link itself (``O_NOFOLLOW``), so a link swapped in after the folder was
    listed is refused too."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    if not follow:
        if not getattr(os, "O_NOFOLLOW", 0) and os.path.islink(path):  # platforms without it
            raise OSError(SYMLINK_IN_FOLDER)
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise OSError(SYMLINK_IN_FOLDER) from None
        raise OSError(f"cannot open: {exc.strerror or exc}; skipped") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file (a FIFO, device or directory); skipped")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _read_capped(fh: BinaryIO) -> bytes:
    """A page: at most the engine's page cap, plus one byte to tell a page over it."""
    from sst_cleaner.engine._limits import Limits

    cap = Limits().max_page_bytes
    body = fh.read(cap + 1)
    if len(body) > cap:
        raise OSError(f"over the {cap} byte page limit; skipped")
    return body


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


#: DEL and the C1 controls (U+0080-U+009F; U+009B is a terminal's CSI): the engine keeps
#: them in a page's text, they never show as anything, and a terminal may act on them
_C1_DELETE = dict.fromkeys([0x7F, *range(0x80, 0xA0)])
_C1 = re.compile("[\x7f-\x9f]")


def _render(page: Page, result, fmt: str, links: bool, sentences: bool) -> str:
    if fmt != "json":
        return _render_page(result, fmt, links).translate(_C1_DELETE)
    text = _render_json(page, result, links, sentences)
    # in JSON they are escaped, which loses nothing (JSON strings are the only place they can be)
    return _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _render_page(result, fmt: str, links: bool) -> str:
    if fmt == "text":
        return result.text
    if fmt == "markdown":
        return result.as_markdown(links)
    return result.as_html(links)


def _render_json(page: Page, result, links: bool, sentences: bool) -> str:
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
        name = printable_name(page.name)
        if fmt == "html":
            name = _comment_name(page.name)
        elif fmt == "markdown":  # a Markdown renderer would run a name's `<script>`
            name = html.escape(name, quote=False)
        out.write(f"<!-- {name} -->\n" if fmt == "html" else f"==> {name} <==\n")
    out.write(text + "\n")
    if fmt != "json" and several:
        out.write("\n")


class _Parser(argparse.ArgumentParser):
    """argparse echoes the arguments it refuses (``unrecognized arguments: NAME``): a
    file name from a shell glob with control characters must not reach the terminal raw."""

    def error(self, message: str):
        super().error("\n".join(printable_name(line) for line in message.split("\n")))


def _parser() -> argparse.ArgumentParser:
    ap: argparse.ArgumentParser = _Parser(
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
    stdin = spool_stdin() if "-" in args.pages else None
    try:
        if args.command == "fit":
            return _fit(args, stdin)
        return _site_or_clean(args, stdin)
    finally:
        if stdin is not None:
            stdin.file.close()


def _fit(args, stdin: Optional[StdinSpool]) -> int:
    """Learn one model from every page and save it; one summary line on standard
    output says what was learnt and what was not (inputs not read, WARC records
    skipped, pages the fit passed over), as the exit status does."""
    errors: list = []
    skips: Counter = Counter()
    # the engine holds every page it learns from until the model is built, so the
    # pages are listed here (each one within the page cap); see docs/cli.md
    pages = [(p.url, p.body, p.encoding) for p in read_pages(args.pages, errors, stdin=stdin, skips=skips)]
    if not pages:
        raise UsageError("no HTML page found in " + " ".join(printable_name(p) for p in args.pages))
    cleaner = SiteCleaner(method=args.method).fit(pages, n_jobs=args.jobs)
    del pages
    model = printable_name(args.model)
    try:
        cleaner.save(args.model)
    except OSError as exc:
        print(f"sst-cleaner: cannot write {model}: {exc}", file=sys.stderr)
        return EXIT_MODEL
    print(fit_summary(cleaner, model, len(errors), skips))
    # as for `site` and `clean`: an input not read is a failure; a cap or budget met
    # (as a page cleaned `truncated` or `over_budget` is), WARC records that are no
    # page and duplicates are said in the summary but are no failure
    return EXIT_PAGE_ERRORS if errors else EXIT_OK


def fit_summary(cleaner: SiteCleaner, model: str, unread: int, skips: Counter) -> str:
    """``learnt N pages -> MODEL (fit STATUS)``, then what was not learnt, if anything."""
    line = f"learnt {cleaner.n_pages} pages -> {model} (fit {cleaner.fit_status})"
    not_learnt = []
    if unread:
        not_learnt.append(f"{unread} inputs not read")
    not_learnt += [f"{n} {status} records" for status, n in sorted(skips.items())]
    over = cleaner.skipped_pages - cleaner.model_full_pages
    if over:
        not_learnt.append(f"{over} pages over the time budget")
    if cleaner.model_full_pages:
        not_learnt.append(f"{cleaner.model_full_pages} pages past the model's entry cap")
    if cleaner.duplicate_pages:
        not_learnt.append(f"{cleaner.duplicate_pages} duplicate pages")
    return line + ("; not learnt: " + ", ".join(not_learnt) if not_learnt else "")


def _site_or_clean(args, stdin: Optional[StdinSpool]) -> int:
    from sst_cleaner.engine._model_io import ModelFormatError

    if args.command == "explain":
        from sst_cleaner.cli._explain import run

        return run(args, stdin)
    errors: list = []
    # `site` learns each site from its first pages, then cleans every page in a
    # second pass over the inputs (standard input is spooled, so it is read again)
    samples, total = _sample_sites(read_pages(args.pages, errors, stdin=stdin))
    if not total:
        raise UsageError("no HTML page found in " + " ".join(printable_name(p) for p in args.pages))
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
    pages = read_pages(args.pages, [], report=False, stdin=stdin)
    failed = _clean_all(render_pages(pages, args), total, cleaners, args)
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
    try:
        out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    except OSError as exc:
        raise UsageError(f"cannot write the output {printable_name(args.output)}: {exc.strerror or exc}") from None
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
            try:
                _write(out, page, text, args.format, total > 1)
            except BrokenPipeError:
                raise
            except OSError as exc:  # a full disk: say so, as for a page that failed
                print(f"sst-cleaner: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
                return failed + 1
    finally:
        progress.done()
        if out is not sys.stdout:
            out.close()
    return failed


if __name__ == "__main__":
    sys.exit(main())
