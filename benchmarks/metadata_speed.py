"""What reading a page's metadata costs, and whether its values changed, against another
revision of the metadata module.

    python benchmarks/metadata_speed.py [CORPUS_DIR ...] [--old-rev main] [--diffs 5]

For every page of the corpora (``manifest.jsonl`` rows with ``"html"``; default
``../shared/datasets/sites-dev``), in one process, old and new interleaved (the order
swapped every page), CPU time (``time.thread_time``):

* **old**: ``extract_metadata(body, url=url)`` of ``sst_cleaner/engine/_metadata.py`` at
  ``--old-rev`` (read with ``git show`` into a temporary module), which parses the page
  itself;
* **new**: what metadata adds to a clean that parses the page anyway: setting the head
  and the body's JSON-LD aside during the parse (``_head.detach_head`` and
  ``body_jsonld`` on a freshly parsed tree), plus ``read_metadata`` on the parsed page.

Prints the median and mean milliseconds per page of each, and the pages whose fields
differ (per field, with ``--diffs N`` examples). Old values are compared as the old
``CleanResult.metadata`` gave them (the page title filled in when no source had one).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def load_old(rev: str):
    source = subprocess.run(
        ["git", "show", f"{rev}:sst_cleaner/engine/_metadata.py"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "old_metadata.py")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location("old_metadata", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def pages_of(corpus: str):
    with open(os.path.join(corpus, "manifest.jsonl"), encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row.get("html"):
                with open(os.path.join(corpus, row["html"]), "rb") as page:
                    yield row.get("id"), row.get("url"), page.read()


def new_cost(body: bytes, url):
    """(fields, CPU seconds metadata adds to a clean's parse)."""
    from sst_cleaner.engine._dom import _parse_document, _sanitize_text, decode_html, parse_html
    from sst_cleaner.engine._head import body_jsonld, detach_head
    from sst_cleaner.engine._metadata import read_metadata

    text, utf8 = _sanitize_text(decode_html(body))
    doc, _deep, _lost = _parse_document(utf8 if utf8 is not None else text.encode("utf-8"))
    page = parse_html(body, url=url)
    clock = time.thread_time
    start = clock()
    if doc is not None:
        detach_head(doc), body_jsonld(doc, text)
    got = read_metadata(page)
    spent = clock() - start
    fields = got.fields
    if not fields.get("title") and page.title:
        fields["title"] = page.title
    return fields, spent


def old_cost(old, body: bytes, url):
    from sst_cleaner.engine._dom import parse_html

    clock = time.thread_time
    start = clock()
    fields = old.extract_metadata(body, url=url)
    spent = clock() - start
    if not fields.get("title"):
        title = parse_html(body, url=url).title
        if title:
            fields["title"] = title
    return fields, spent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpora", nargs="*", default=[os.path.join(ROOT, "..", "shared", "datasets", "sites-dev")])
    ap.add_argument("--old-rev", default="main")
    ap.add_argument("--diffs", type=int, default=3, help="examples printed per differing field")
    args = ap.parse_args(argv)
    sys.path.insert(0, ROOT)
    old = load_old(args.old_rev)
    t_old, t_new, diffs, n = [], [], {}, 0
    for corpus in args.corpora:
        for k, (pid, url, body) in enumerate(pages_of(corpus)):
            n += 1
            if k % 2:
                (a, ta), (b, tb) = old_cost(old, body, url), new_cost(body, url)
            else:
                (b, tb), (a, ta) = new_cost(body, url), old_cost(old, body, url)
            t_old.append(ta)
            t_new.append(tb)
            for field in a:
                if a[field] != b.get(field):
                    diffs.setdefault(field, []).append((os.path.basename(corpus.rstrip("/")), pid, a[field], b[field]))
    print(f"{n} pages")
    for name, ts in (("old", t_old), ("new", t_new)):
        print(f"{name}: median {statistics.median(ts) * 1e3:.3f} ms, mean {statistics.mean(ts) * 1e3:.3f} ms a page")
    pages = {(c, p) for rows in diffs.values() for c, p, _a, _b in rows}
    print(f"pages whose metadata differs: {len(pages)}")
    for field, rows in sorted(diffs.items()):
        print(f"  {field}: {len(rows)}")
        for corpus, pid, a, b in rows[: args.diffs]:
            print(f"    {corpus}/{pid}: old {str(a)[:100]!r} new {str(b)[:100]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
