#!/usr/bin/env python3
"""The tail: pages below an F1 threshold, per corpus, ours beside the competitors'.

    python benchmarks/tail_report.py DATA (--ours DIR [DIR ...] | --held-out PATH) [--baselines DIR]
        [--threshold 0.3] [--corpora portal,sites-dev,...] [--list] [--markdown]

DATA        a folder of corpora (``../shared/datasets``)
--ours      folders of our predictions, ``DIR/<corpus>.jsonl`` (one ``{"id", "text"}`` a
            line), as ``site_eval.py --preds DIR`` writes them; the first folder holding
            a corpus's file is used, so one run can mix modes (``loo/``, ``page/``, ...)
--baselines the ``--out`` folder of the shared ``baselines.py`` (``DIR/<corpus>/E.jsonl``)

Every figure is on the pages our file predicts (a ``sample`` run predicts only the pages
it did not fit on), the competitors' on the same pages, so the counts compare. Each page
is scored twice: with the shared scorer's ``\\w+`` tokens and with every Han, kana or
Hangul character a token (``cjk_tokens``); the two differ only on pages in those scripts.
``--held-out PATH`` reads ``train_default.py --page-f1 PATH`` instead (every page's F1 when
the scorers never saw its corpus, ``LOCO``, or its site, ``CV``: the figures designs are
chosen by) and prints the same table for each of those, per corpus and mode (``#page``:
the page judged alone), the competitors on the same pages.
``--list`` also prints our tail pages: id, P / R / F1, words predicted and in the gold,
and the competitors' F1 on them (to read why a page is in the tail).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from sst_cleaner.tools.bench._scoring import cjk_tokens, prf_tokens, tokens  # noqa: E402

EXTRACTORS = ("trafilatura", "readability", "resiliparse")
DEFAULT_CORPORA = "portal,sites-dev,news-eras,docs-dev,single-dev,single-chaos"


def read_jsonl(path: str) -> dict[str, str]:
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                out[row["id"]] = row.get("text") or ""
    return out


def golds(data: str, corpus: str) -> dict[str, str]:
    root = os.path.join(data, corpus)
    out = {}
    with open(os.path.join(root, "manifest.jsonl"), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                with open(os.path.join(root, row["gold"]), encoding="utf-8") as g:
                    out[row["id"]] = g.read()
    return out


def page_scores(preds: dict[str, str], gold: dict[str, str], ids: list[str]) -> dict[str, dict]:
    """Per page: P/R/F1 in words and the CJK-aware F1, and the token counts."""
    out = {}
    for pid in ids:
        pred = preds.get(pid, "")
        pw, gw = tokens(pred), tokens(gold[pid])
        p, r, f = prf_tokens(pw, gw)
        fc = prf_tokens(cjk_tokens(pred), cjk_tokens(gold[pid]))[2]
        out[pid] = {"p": p, "r": r, "f1": f, "f1_cjk": fc, "pred_words": len(pw), "gold_words": len(gw)}
    return out


def summary(scores: dict[str, dict], threshold: float) -> dict:
    n = len(scores)
    return {
        "pages": n,
        "f1": sum(s["f1"] for s in scores.values()) / n if n else 0.0,
        "f1_cjk": sum(s["f1_cjk"] for s in scores.values()) / n if n else 0.0,
        "tail": sum(1 for s in scores.values() if s["f1"] < threshold),
        "tail_cjk": sum(1 for s in scores.values() if s["f1_cjk"] < threshold),
        "empty": sum(1 for s in scores.values() if s["pred_words"] == 0 and s["gold_words"]),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data")
    ap.add_argument("--ours", nargs="+", default=[], metavar="DIR")
    ap.add_argument("--held-out", metavar="PATH", help="train_default.py --page-f1 output")
    ap.add_argument("--baselines", metavar="DIR")
    ap.add_argument("--threshold", type=float, default=0.3)
    ap.add_argument("--corpora", default=DEFAULT_CORPORA)
    ap.add_argument("--list", action="store_true", help="print our tail pages")
    ap.add_argument("--json", metavar="PATH", help="write every per-page score to PATH")
    args = ap.parse_args(argv)

    t = args.threshold
    if args.held_out:
        return held_out_tables(args)
    if not args.ours:
        ap.error("give --ours or --held-out")
    rows, listing, dump = [], [], {}
    for corpus in args.corpora.split(","):
        found = [os.path.join(d, f"{corpus}.jsonl") for d in args.ours]
        ours_path = next((p for p in found if os.path.isfile(p)), None)
        if ours_path is None:
            print(f"# {corpus}: no predictions of ours, skipped", file=sys.stderr)
            continue
        gold = golds(args.data, corpus)
        ours = read_jsonl(ours_path)
        ids = [pid for pid in gold if pid in ours]
        mine = page_scores(ours, gold, ids)
        comp = {}
        for e in EXTRACTORS:
            path = os.path.join(args.baselines or "", corpus, f"{e}.jsonl")
            if args.baselines and os.path.isfile(path):
                comp[e] = page_scores(read_jsonl(path), gold, ids)
        rows.append((corpus, summary(mine, t), {e: summary(s, t) for e, s in comp.items()}))
        dump[corpus] = {"ours": mine, **comp}
        for pid in sorted(ids, key=lambda i: mine[i]["f1"]):
            s = mine[pid]
            if s["f1"] >= t:
                break
            others = " ".join(f"{e}={comp[e][pid]['f1']:.2f}" for e in comp)
            listing.append(
                f"{corpus:13} {pid:40} P={s['p']:.2f} R={s['r']:.2f} F1={s['f1']:.2f} "
                f"words={s['pred_words']}/{s['gold_words']} {others}"
            )

    comps = [e for e in EXTRACTORS if any(e in c for _, _, c in rows)]
    head = ["corpus", "pages", f"ours < {t}", "ours F1"] + [f"{e} < {t} / F1" for e in comps]
    print("| " + " | ".join(head) + " |")
    print("|---|" + "---:|" * (len(head) - 1))
    for corpus, s, c in rows:
        cells = [corpus, str(s["pages"]), f"{s['tail']} ({s['empty']} empty)", f"{s['f1']:.4f}"]
        for e in comps:
            cells.append(f"{c[e]['tail']} / {c[e]['f1']:.4f}" if e in c else "aggregate only")
        print("| " + " | ".join(cells) + " |")
    print()
    print(f"CJK-aware tokens (each Han, kana or Hangul character a token), below {t} / F1:")
    for corpus, s, c in rows:
        extra = "  ".join(f"{e} {c[e]['tail_cjk']} / {c[e]['f1_cjk']:.4f}" for e in comps if e in c)
        print(f"  {corpus:13} ours {s['tail_cjk']} / {s['f1_cjk']:.4f}  {extra}")
    if args.list:
        print()
        print("\n".join(listing))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(dump, f)
    return 0


def held_out_tables(args) -> int:
    """The tail of ``train_default.py --page-f1``: per protocol, corpus and mode."""
    t = args.threshold
    with open(args.held_out, encoding="utf-8") as f:
        held = json.load(f)
    wanted = args.corpora.split(",")
    for label, pages in held.items():
        groups: dict[str, dict[str, float]] = {}
        for pid, v in pages.items():
            groups.setdefault(v["corpus"], {})[pid.split("#")[0]] = v["f1"]
        print(f"{label}: pages below {t} (F1), the competitors on the same pages")
        print()
        print("| corpus | mode | pages | ours | " + " | ".join(EXTRACTORS) + " |")
        print("|---|---|---:|---:|" + "---:|" * len(EXTRACTORS))
        for name in sorted(
            groups, key=lambda g: (wanted.index(g.split("#")[0]) if g.split("#")[0] in wanted else 99, g)
        ):
            corpus = name.split("#")[0]
            if corpus not in wanted:
                continue
            f1 = groups[name]
            cells = [corpus, "page" if "#" in name else "site", str(len(f1))]
            cells.append(f"{sum(v < t for v in f1.values())} ({sum(f1.values()) / len(f1):.3f})")
            gold = golds(args.data, corpus)
            for e in EXTRACTORS:
                path = os.path.join(args.baselines or "", corpus, f"{e}.jsonl")
                if not (args.baselines and os.path.isfile(path)):
                    cells.append("aggregate only")
                    continue
                s = page_scores(read_jsonl(path), gold, list(f1))
                cells.append(
                    f"{sum(v['f1'] < t for v in s.values())} ({sum(v['f1'] for v in s.values()) / len(s):.3f})"
                )
            print("| " + " | ".join(cells) + " |")
            if args.list:
                for pid, v in sorted(f1.items(), key=lambda kv: kv[1]):
                    if v >= t:
                        break
                    print(f"    {name:20} {pid:40} F1={v:.2f}")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
