"""Metadata accuracy of ``result.metadata`` beside trafilatura's, on dev pages that carry
an article's JSON-LD.

    python benchmarks/metadata_eval.py [DATASETS] [--corpora news-eras,single-chaos] [--show 5]

**The gold.** For each page with a JSON-LD object of an article type that has a
``headline``, the truth is read from that object by the small, separate reader below
(headline, author names, ``datePublished`` / ``dateModified`` as dates, ``description``,
publisher name) and from ``<html lang>`` for the language. A sample was checked by hand
against the pages (``--show N`` prints N pages' gold beside both extractors).

**The caveat.** sst-cleaner reads JSON-LD first, so on these pages it is scored partly
against its own first source; the row ``sst-cleaner without JSON-LD`` removes every JSON-LD
script before extracting, and says what it does on pages that carry only OpenGraph,
``<meta>`` and ``<time>``. Fields are compared normalised: case and spacing for text, the
set of names for authors, the date part for dates, the primary subtag for languages. A
field counts only on pages whose gold has it; "missing" when the extractor gave nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time

ARTICLE = re.compile(r"article|posting|report", re.I)
SCRIPT = re.compile(r"<script[^>]*application/ld\+json[^>]*>(.*?)</script>", re.I | re.S)
LANG = re.compile(r"<html\b[^>]*\blang\s*=\s*[\"']?([A-Za-z-]+)", re.I)
FIELDS = ("title", "authors", "published", "modified", "description", "site_name", "language")


def _walk(data):
    todo = [data]
    while todo:
        node = todo.pop()
        if isinstance(node, list):
            todo.extend(node)
        elif isinstance(node, dict):
            yield node
            todo.extend(v for k, v in node.items() if k == "@graph")


def _names(value):
    items = value if isinstance(value, list) else [value]
    out = set()
    for it in items:
        name = it.get("name") if isinstance(it, dict) else it
        if isinstance(name, str) and name.strip():
            out.add(_norm(name))
    return out


def _gold_date(value):
    """The date part of a JSON-LD date: ISO, or JavaScript's Date string ("Thu Apr 06
    2017 01:42:00 GMT-0400"), which some sites write; None for anything else."""
    from datetime import datetime

    value = str(value or "").strip()
    if re.match(r"\d{4}-\d{2}-\d{2}", value):
        return value[:10]
    try:
        return datetime.strptime(value[:15], "%a %b %d %Y").date().isoformat()
    except ValueError:
        return None


def _norm(text):
    return " ".join(str(text).lower().split())


def gold_of(html: str):
    """The article's truth from its JSON-LD (None: no article object with a headline)."""
    for raw in SCRIPT.findall(html):
        try:
            data = json.loads(raw.strip().rstrip(";"))
        except ValueError:
            continue
        for node in _walk(data):
            types = node.get("@type")
            types = " ".join(t for t in (types if isinstance(types, list) else [types]) if isinstance(t, str))
            if ARTICLE.search(types) and isinstance(node.get("headline"), str):
                pub = node.get("publisher")
                lang = LANG.search(html)
                return {
                    "title": _norm(node["headline"]),
                    "authors": _names(node.get("author")) or None,
                    "published": _gold_date(node.get("datePublished")),
                    "modified": _gold_date(node.get("dateModified")),
                    "description": _norm(node["description"]) if isinstance(node.get("description"), str) else None,
                    "site_name": next(iter(_names(pub)), None) if pub else None,
                    "language": lang.group(1).split("-")[0].lower() if lang else None,
                }
    return None


def _same(field, gold, got):
    if not got:
        return None
    if field == "authors":
        names = {_norm(a) for a in (got if isinstance(got, list) else re.split(r";|,| and ", got)) if a.strip()}
        return names == gold
    if field in ("published", "modified"):
        return str(got)[:10] == gold
    if field == "language":
        return str(got).replace("_", "-").split("-")[0].lower() == gold
    return _norm(got) == gold


def ours(html, url, jsonld=True):
    from sst_cleaner.engine._metadata import extract_metadata

    return extract_metadata(html if jsonld else SCRIPT.sub("", html), url=url)


def trafilatura_meta(html, url):
    import trafilatura

    doc = trafilatura.extract_metadata(html, default_url=url)
    if doc is None:
        return {}
    return {
        "title": doc.title,
        "authors": doc.author,
        "published": doc.date,
        "modified": None,
        "description": doc.description,
        "site_name": doc.sitename,
        "language": None,
    }


def load_rows(datasets: str, corpora: str) -> list:
    """(manifest row, html, gold) of every page with an article's JSON-LD."""
    sys.path.insert(0, "/work/shared/bench")
    from pages import load_manifest, read_page  # the benchmark's one reading rule

    rows = []
    for corpus in corpora.split(","):
        for rec in load_manifest(os.path.join(datasets, corpus, "manifest.jsonl")):
            html = read_page(rec)[0]  # (text, encoding)
            gold = gold_of(html)
            if gold:
                rows.append((rec, html, gold))
    return rows


SYSTEMS = {
    "sst-cleaner": lambda h, u: ours(h, u),
    "sst-cleaner without JSON-LD": lambda h, u: ours(h, u, jsonld=False),
    "trafilatura 2.3.1": trafilatura_meta,
}


def table(rows: list) -> list[str]:
    """The accuracy table (Markdown lines): share of right fields, pages in brackets."""
    lines = ["| extractor | " + " | ".join(FIELDS) + " | CPU ms/page |", "|---|" + "---|" * (len(FIELDS) + 1)]
    for name, fn in SYSTEMS.items():
        right = {f: 0 for f in FIELDS}
        total = {f: 0 for f in FIELDS}
        t = time.process_time()
        outs = [fn(html, rec.get("url")) for rec, html, _g in rows]
        ms = (time.process_time() - t) * 1000 / max(1, len(rows))
        for (_rec, _html, gold), got in zip(rows, outs):
            for f in FIELDS:
                if gold.get(f):
                    total[f] += 1
                    right[f] += bool(_same(f, gold[f], got.get(f)))
        cells = [f"{right[f] / total[f]:.3f} ({total[f]})" if total[f] else "-" for f in FIELDS]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {ms:.1f} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("datasets", nargs="?", default="/work/shared/datasets")
    ap.add_argument("--corpora", default="news-eras,single-chaos")
    ap.add_argument("--show", type=int, default=0)
    args = ap.parse_args()
    rows = load_rows(args.datasets, args.corpora)
    print(f"{len(rows)} pages with an article's JSON-LD ({args.corpora})")
    print("\n".join(table(rows)))
    for rec, html, gold in rows[: args.show]:
        print("\n" + rec["id"], rec.get("url"))
        print("  gold       ", {k: v for k, v in gold.items() if v})
        print("  sst-cleaner", {k: v for k, v in ours(html, rec.get("url")).items() if v and k in FIELDS})
        print("  trafilatura", {k: v for k, v in trafilatura_meta(html, rec.get("url")).items() if v})


if __name__ == "__main__":
    main()
