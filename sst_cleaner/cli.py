"""Command line for offline corpora (no Scrapy needed).

    sst-cleaner site PAGES... [-o out.jsonl]           fit on the pages of one site, clean each
    sst-cleaner fit PAGES... --model site.json         learn a site model and save it
                                                       (site, fit: learnt on every CPU; --jobs N for N processes)
    sst-cleaner clean PAGES... --model site.json       clean pages with a saved model
    sst-cleaner clean PAGES...                         no model: page-level cleaning

PAGES are HTML files or folders (every ``*.htm``/``*.html`` file inside, sorted). Output is
JSON Lines, one ``{"path", "title", "text"}`` object per page (``--sentences`` adds the
informative sentences). ``python -m sst_cleaner`` is the same command.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Iterable, Iterator, Optional

from .cleaner import DEFAULT_METHOD, SiteCleaner, available_methods


def _html_files(paths: Iterable[str]) -> Iterator[str]:
    for path in paths:
        if os.path.isdir(path):
            for name in sorted(os.listdir(path)):
                full = os.path.join(path, name)
                if os.path.isfile(full) and name.lower().endswith((".html", ".htm")):
                    yield full
        elif os.path.isfile(path):
            yield path
        else:
            raise SystemExit(f"sst-cleaner: no such file or folder: {path}")


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _emit(out, path: str, result, sentences: bool) -> None:
    row = {"path": path, "title": result.title, "text": result.text}
    if sentences:
        row["sentences"] = result.sentences
    out.write(json.dumps(row, ensure_ascii=False) + "\n")


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="sst-cleaner", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["site", "fit", "clean", "methods"])
    ap.add_argument("pages", nargs="*", help="HTML files or folders")
    ap.add_argument("--model", help="model file (JSON) to write (fit) or read (clean)")
    ap.add_argument("--method", default=DEFAULT_METHOD, help="cleaning method (see `sst-cleaner methods`)")
    ap.add_argument("-o", "--output", help="write JSON Lines here instead of standard output")
    ap.add_argument("--sentences", action="store_true", help="add the informative sentences")
    ap.add_argument("--jobs", type=int, default=-1,
                    help="processes to learn the site on (default -1: every CPU, for sites "
                         "with enough HTML to be worth it, see sst_cleaner.parallel_fit)")
    args = ap.parse_args(argv)

    if args.command == "methods":
        print("\n".join(available_methods()))
        return 0
    if args.jobs == 0 or args.jobs < -1:
        ap.error("--jobs must be a positive number or -1")
    files = list(_html_files(args.pages))
    if not files:
        ap.error("no HTML pages given")
    if args.command == "fit":
        if not args.model:
            ap.error("fit needs --model PATH")
        cleaner = SiteCleaner(method=args.method).fit((_read(f) for f in files), n_jobs=args.jobs)
        cleaner.save(args.model)
        print(f"learnt {cleaner.n_pages} pages -> {args.model}", file=sys.stderr)
        return 0
    if args.command == "site":
        cleaner = SiteCleaner(method=args.method).fit((_read(f) for f in files), n_jobs=args.jobs)
    elif args.model:
        cleaner = SiteCleaner.load(args.model)
    else:
        cleaner = SiteCleaner(method=args.method)
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    errors = 0
    try:
        for f in files:
            try:
                result = cleaner.clean(_read(f))
            except Exception as exc:  # one broken page never stops the run
                errors += 1
                print(f"sst-cleaner: {f}: {exc!r}", file=sys.stderr)
                continue
            _emit(out, f, result, args.sentences)
    finally:
        if out is not sys.stdout:
            out.close()
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
