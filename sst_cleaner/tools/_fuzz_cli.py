"""The fuzzer's command-line cases: what a hostile or careless user hands ``sst-cleaner``.

A case is a scenario, generated from the fuzzer's ``(seed, index)`` and kept as JSON
(the reproducer): a folder of files with odd names (not UTF-8, control characters,
ANSI escapes, newlines forging ``==> name <==`` headers, leading dashes, right-to-left
overrides, long names), odd contents (empty, binary, a PDF, over the page cap, cut
pages, UTF-16, page text holding control characters and script, WARC archives from
:mod:`~sst_cleaner.tools._fuzz_warc`), nested folders, symbolic links (to a page beside
them, to a file outside the folder, to devices, dangling, looping, to folders), FIFOs;
standard input of every kind; and a command line drawn from every command and option,
right or wrong (unknown methods and flags, bad ``--jobs``, models and outputs that are
folders, devices, FIFOs or missing).

:func:`run_cli_case` builds the scenario in a temporary folder and runs
:func:`sst_cleaner.cli.main` in this process (standard streams swapped for buffers; the
standard output strict UTF-8, as on a UTF-8 terminal). Its contract, checked here:
no exception escapes, the exit status is a documented one, neither stream carries a
control character other than a newline or tab (the progress line's own ``\\r\\x1b[K``
aside), and the output is valid for its format (JSON Lines of known statuses; no live
script or event handler in HTML; no raw HTML or ``javascript:`` link in Markdown; the
``fit`` summary line and a model file).
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import sys
import tempfile
import time
from typing import Any, Optional

from sst_cleaner.tools._fuzz_cases import normal_page

EXIT_CODES = frozenset({0, 1, 2, 3, 130, 141})
STATUSES = frozenset({"ok", "truncated", "over_budget", "site_empty", "empty_fallback"})

_NAMES: tuple = (
    "a.html",
    "b.htm",
    "page.HTML",
    "c.xhtml",
    b"caf\xe9.html",  # not UTF-8
    b"\xff\xfe.html",
    "x\n==> forged <==\n.html",
    "\x1b[2J\x1b[31mred.html",
    "bell\x07.html",
    "cr\r.html",
    "tab\t.html",
    "\u202eevil.html",
    "emoji\U0001f600.html",
    "-rf.html",
    "--help.html",
    " .html",
    "--><script>alert(1)</script><!--.html",
    "a" * 240 + ".html",
    "crawl.warc",
    "crawl.warc.gz",
    "old.arc.gz",
    "notes.txt",
    "style.css",
    "\u0085nel.html",
    "del\x7f.html",
)
_CONTENTS = (
    "page",
    "page",
    "page",
    "empty",
    "binary",
    "pdf",
    "cut",
    "utf16",
    "hostile_text",
    "script",
    "warc",
    "huge",
)
_LINK_TARGETS = ("sibling", "outside", "/dev/zero", "/dev/null", "/dev/urandom", "dangling", "self", "parent", "folder")
_FORMATS = ("json", "text", "markdown", "html")
_METHODS = ("default", "default", "default", "sentences", "nope", "\x1b[31m", "")


def _name(rng: random.Random) -> str:
    """A file name as JSON can hold it: bytes that are not UTF-8 as ``\\udcNN``
    surrogates (``os.fsdecode``'s way)."""
    raw = rng.choice(_NAMES)
    return os.fsdecode(raw) if isinstance(raw, bytes) else raw


def gen_cli(rng: random.Random, scale: float) -> tuple[bytes, Optional[str]]:
    """A scenario (JSON bytes): files, standard input and a command line."""
    entries: list[dict] = []
    for k in range(rng.randint(0, 7)):
        depth = rng.choice((0, 0, 0, 1, 2, 30))
        folder = "/".join(f"d{rng.randrange(3)}" for _ in range(depth))
        name = f"{k}-{_name(rng)}"
        path = f"{folder}/{name}" if folder else name
        roll = rng.random()
        if roll < 0.7:
            entries.append({"path": path, "type": "file", "content": rng.choice(_CONTENTS)})
        elif roll < 0.9:
            entries.append({"path": path, "type": "symlink", "target": rng.choice(_LINK_TARGETS)})
        elif roll < 0.95:
            entries.append({"path": path, "type": "fifo"})
        else:
            entries.append({"path": path, "type": "dir"})
    command = rng.choice(("site", "site", "clean", "clean", "fit", "methods", None, "--version", "bogus"))
    inputs = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        pick = rng.random()
        if pick < 0.45 or not entries:
            inputs.append("@folder")
        elif pick < 0.75:
            inputs.append("@entry:" + rng.choice(entries)["path"])
        elif pick < 0.9:
            inputs.append("-")
        else:
            inputs.append(rng.choice(("@missing", "@outside_folder", "/dev/null", "/dev/zero", "")))
    # each input once: naming one folder three times costs three times as much, as it should
    inputs = list(dict.fromkeys(inputs))
    flags: list = []
    if command in ("site", "clean"):
        if rng.random() < 0.7:
            flags += ["--format", rng.choice(_FORMATS)]
        flags += [f for f in ("--links", "--sentences", "--progress", "--no-progress") if rng.random() < 0.3]
        if rng.random() < 0.4:
            flags += ["-o", rng.choice(("@out_file", "@out_file", "@folder", "@missing_dir/out", "/dev/null"))]
    if command == "clean" and rng.random() < 0.5:
        models = ("@good_model", "@hostile_model", "@folder", "@missing", "/dev/null", "@fifo")
        flags += ["--model", rng.choice(models)]
    if command == "fit":
        targets = ("@new_model", "@new_model", "@folder", "/dev/null", "@fifo", "@missing_dir/m")
        flags += ["--model", rng.choice(targets)]
    if command in ("site", "fit") and rng.random() < 0.4:
        flags += ["--jobs", rng.choice(("1", "-1", "0", "-2", "x", "99999999999999999999"))]
    if command in ("site", "clean", "fit") and rng.random() < 0.3:
        flags += ["--method", rng.choice(_METHODS)]
    if rng.random() < 0.05:
        flags.append(rng.choice(("--bogus", "--format", "-o", "--model=", "--jobs", "--help")))
    separator = rng.random() < 0.3  # `--` before the inputs: names with a leading dash are inputs
    scenario = {
        "seed": rng.randrange(1 << 30),
        "scale": scale,
        "entries": entries,
        "command": command,
        "flags": flags,
        "inputs": inputs,
        "separator": separator,
        "stdin": rng.choice(_CONTENTS + ("none",)),
    }
    return json.dumps(scenario, ensure_ascii=True).encode("ascii"), None


# -- building a scenario --------------------------------------------------------------
def _content(kind: str, rng: random.Random, scale: float) -> bytes:
    from sst_cleaner.engine._limits import Limits

    if kind == "page":
        return normal_page(rng, rng.randrange(50)).encode("utf-8")
    if kind == "empty" or kind == "none":
        return b""
    if kind == "binary":
        return rng.randbytes(rng.randint(1, 5000))
    if kind == "pdf":
        return b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< >>\nendobj\n" + rng.randbytes(200)
    if kind == "cut":
        page = normal_page(rng, rng.randrange(50)).encode("utf-8")
        return page[: rng.randrange(len(page) + 1)]
    if kind == "utf16":
        return normal_page(rng, rng.randrange(50)).encode("utf-16")
    if kind == "hostile_text":  # control characters and terminal escapes in the page's own text
        controls = ("\x1b[2J", "\x1b]0;title\x07", "\x9b31m", "\x85", "\x7f", "\r", "\x00", "\u202e")
        junk = "".join(rng.choice(controls) for _ in range(8))
        text = normal_page(rng, rng.randrange(50)).replace("<p>", f"<p>{junk} ", 2)
        return text.replace("<title>", f"<title>{junk}").encode("utf-8", "surrogatepass")
    if kind == "script":
        bait = (
            "&lt;script&gt;alert(1)&lt;/script&gt; <img src=x onerror=alert(1)> [x](javascript:alert(1)) "
            "<iframe src=javascript:alert(1)></iframe> <a href='javascript:alert(1)' onclick='x()'>link</a>"
        )
        return normal_page(rng, rng.randrange(50)).replace("<p>", f"<p>{bait} ", 2).encode("utf-8")
    if kind == "warc":
        from sst_cleaner.tools._fuzz_warc import gen_warc

        return gen_warc(rng, scale)[0]
    if kind == "huge":
        size = Limits().max_page_bytes + rng.choice((-100, 1, 1000))  # at the cap, or just over it
        return b"<html><body><p>" + b"x" * size + b"</p></body></html>"
    raise ValueError(kind)


def _build(scenario: dict, tmp: str) -> tuple[list[str], bytes]:
    """The files of the scenario under ``tmp``; returns (argv, standard input)."""
    from sst_cleaner.tools.fuzz import hostile_model

    rng = random.Random(scenario["seed"])
    scale = scenario["scale"]
    folder = os.path.join(tmp, "pages")
    outside = os.path.join(tmp, "outside")
    os.makedirs(folder)
    os.makedirs(outside)
    with open(os.path.join(outside, "secret.html"), "wb") as fh:
        fh.write(normal_page(rng, 7).replace("<h1>", "<h1>OUTSIDE-SECRET ").encode())
    made: list[str] = []
    for entry in scenario["entries"]:
        path = os.path.join(folder, os.fsencode(entry["path"]).decode("utf-8", "surrogateescape"))
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if entry["type"] == "file":
                with open(path, "wb") as fh:
                    fh.write(_content(entry["content"], rng, scale))
            elif entry["type"] == "fifo":
                os.mkfifo(path)
            elif entry["type"] == "dir":
                os.makedirs(path, exist_ok=True)
            else:
                target = entry["target"]
                targets = {
                    "sibling": made[-1] if made else path,
                    "outside": os.path.join(outside, "secret.html"),
                    "dangling": os.path.join(tmp, "nowhere.html"),
                    "self": path,
                    "parent": folder,
                    "folder": outside,
                }
                os.symlink(targets.get(target, target), path)
        except FileExistsError:
            continue  # two entries drew the same path (or a file where a folder goes)
        except NotADirectoryError:
            continue
        made.append(path)
    names = {
        "@folder": folder,
        "@missing": os.path.join(tmp, "missing.html"),
        "@outside_folder": outside,
        "@out_file": os.path.join(tmp, "out.txt"),
        "@missing_dir/out": os.path.join(tmp, "no", "such", "out.txt"),
        "@missing_dir/m": os.path.join(tmp, "no", "such", "m.json"),
        "@new_model": os.path.join(tmp, "model.json"),
        "@fifo": os.path.join(tmp, "model.fifo"),
        "@good_model": os.path.join(tmp, "good.json"),
        "@hostile_model": os.path.join(tmp, "hostile.json"),
    }
    os.mkfifo(names["@fifo"])
    from sst_cleaner.engine._cleaner import SiteCleaner

    good = SiteCleaner().fit([normal_page(rng, i) for i in range(3)])
    good.save(names["@good_model"])
    with open(names["@hostile_model"], "wb") as fh:
        fh.write(hostile_model(rng, json.dumps(good.to_dict()).encode("utf-8")))

    def resolve(arg: str) -> str:
        if arg.startswith("@entry:"):
            return os.path.join(folder, os.fsencode(arg[7:]).decode("utf-8", "surrogateescape"))
        return names.get(arg, arg)

    command = [scenario["command"]] if scenario["command"] else []
    flags = [resolve(f) for f in scenario["flags"]]
    inputs = [resolve(i) for i in scenario["inputs"]]
    argv = command + flags + (["--"] if scenario["separator"] else []) + inputs
    stdin = _content(scenario["stdin"], rng, scale) if "-" in scenario["inputs"] else b""
    return argv, stdin


# -- running and checking ---------------------------------------------------------------
_PROGRESS = "\r\x1b[K"


#: Unicode's control characters (category Cc) but tab and newline
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _raw_controls(text: str) -> list[str]:
    return sorted(set(_CONTROLS.findall(text.replace(_PROGRESS, ""))))


def run_cli_case(data: bytes) -> tuple[int, float]:
    """Run the scenario ``data`` (see :func:`gen_cli`) through ``sst-cleaner``; raises
    ``AssertionError`` when its contract is broken, returns the exit status and the CPU
    seconds of the command alone (building the scenario and checking are not counted)."""
    from sst_cleaner.cli import main

    scenario = json.loads(data)
    saved = sys.stdin, sys.stdout, sys.stderr
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="sst-fuzz-cli-") as tmp:
        argv, stdin = _build(scenario, tmp)
        out, err = io.BytesIO(), io.BytesIO()
        w_in = io.TextIOWrapper(io.BytesIO(stdin))
        w_out = io.TextIOWrapper(out, encoding="utf-8", errors="strict", write_through=True)
        w_err = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True)
        sys.stdin, sys.stdout, sys.stderr = w_in, w_out, w_err
        try:
            os.chdir(tmp)
            c0 = time.process_time()
            try:
                code: Any = main(argv)
            except SystemExit as exc:  # argparse: a usage error, --help, --version
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
            cpu = time.process_time() - c0
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved
            os.chdir(cwd)
            for wrapper in (w_out, w_err):  # so that dropping them cannot close the buffers
                if not wrapper.closed:
                    wrapper.flush()
                    wrapper.detach()
        stdout, stderr = out.getvalue().decode("utf-8"), err.getvalue().decode("utf-8")
        written = stdout
        flags = scenario["flags"]
        output = flags[flags.index("-o") + 1] if "-o" in flags[:-1] else None
        if output == "@out_file" and os.path.isfile(os.path.join(tmp, "out.txt")):
            with open(os.path.join(tmp, "out.txt"), encoding="utf-8") as fh:
                written = fh.read()
        _check(scenario, code, stdout, stderr, written, tmp)
    return int(code), cpu


def _check(scenario: dict, code: Any, stdout: str, stderr: str, written: str, tmp: str) -> None:
    if code not in EXIT_CODES:
        raise AssertionError(f"exit status {code!r} is not a documented one")
    if "Traceback" in stderr:
        raise AssertionError("a traceback on standard error: " + stderr[-300:])
    for stream, text in (("standard output", stdout), ("standard error", stderr), ("the output file", written)):
        bad = _raw_controls(text)
        if bad:
            raise AssertionError(f"raw control characters {bad!r} on {stream}")
    command, flags = scenario["command"], scenario["flags"]
    if "--help" in flags:
        return  # the help, not pages
    fmt = flags[flags.index("--format") + 1] if "--format" in flags[:-1] else "json"
    if command in ("site", "clean") and code in (0, 1):
        _check_format(fmt, written)
    if command == "fit" and code in (0, 1):
        lines = stdout.splitlines()
        line = lines[0] if len(lines) == 1 else ""
        if not (line.startswith("learnt ") and " pages -> " in line and " (fit " in line):
            raise AssertionError(f"fit printed {stdout[:200]!r}, not its summary line")
        if "@new_model" in flags and not os.path.isfile(os.path.join(tmp, "model.json")):
            raise AssertionError("fit exited 0/1 but wrote no model")


_EVENT_HANDLER = re.compile(r"<[a-zA-Z][^<>]*\son[a-zA-Z]+\s*=")
_LIVE_TAG = re.compile(r"<\s*(script|iframe|object|embed|img|svg|style)\b", re.I)
_JS_URL = re.compile(r"(href|src)\s*=\s*[\"']?\s*javascript:", re.I)
_RAW_TAG = re.compile(r"(?<!\\)<\s*/?\s*(script|iframe|img|svg|object|embed|style)\b", re.I)


def _check_format(fmt: str, text: str) -> None:
    if fmt == "json":
        for line in text.splitlines():
            row = json.loads(line)
            if not isinstance(row, dict) or row.get("status") not in STATUSES or not ("url" in row or "path" in row):
                raise AssertionError(f"bad JSON row {line[:200]!r}")
        return
    if fmt == "html":
        _check_html(text, "HTML")
    if fmt == "markdown":
        if re.search(r"(?<!\\)\]\(\s*<?\s*javascript:", text, re.I):  # renderers that keep any link
            raise AssertionError("a javascript: URL in the Markdown output")
        try:
            from markdown_it import MarkdownIt
        except ImportError:  # without the test extra: what can start markup, unescaped
            if _RAW_TAG.search(text):
                raise AssertionError("raw HTML in the Markdown output") from None
            return
        # rendered as a CommonMark renderer with raw HTML on would show it
        _check_html(MarkdownIt("commonmark").render(text), "Markdown, rendered,")


def _without_comments(text: str) -> str:
    """``text`` less its ``<!-- -->`` comments (a lazy regex is quadratic on ``<!--`` * n)."""
    kept, at = [], 0
    while True:
        start = text.find("<!--", at)
        if start < 0:
            kept.append(text[at:])
            break
        kept.append(text[at:start])
        end = text.find("-->", start + 4)
        if end < 0:
            break
        at = end + 3
    return "".join(kept)


def _check_html(text: str, what: str) -> None:
    without_comments = _without_comments(text)
    if _LIVE_TAG.search(without_comments) or _JS_URL.search(without_comments):
        raise AssertionError(f"live script, frame or javascript: URL in the {what} output")
    if _EVENT_HANDLER.search(without_comments):
        raise AssertionError(f"an event handler attribute in the {what} output")


#: (name, weight, generator) for :data:`sst_cleaner.tools._fuzz_cases.GENERATORS`
GENERATOR = ("cli", 8.0, gen_cli)
