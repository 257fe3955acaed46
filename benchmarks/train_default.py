"""Learn (and honestly evaluate) the default method's scorer.

    python benchmarks/train_default.py ../shared/datasets [--cache /tmp/feats.pkl]

For every site of the multi-page dev corpora it fits the site model on the site's pages
(each page judged only by the others: the model removes a page's own contribution), turns
every sentence into the feature vector of ``sst_cleaner.hybrid.sentence_features``, and
labels it by the share of its tokens found in the page's gold text. Docs sites are fitted
on 20 pages (the crawl setting) and every page is used. Every page of a multi-page corpus
is also turned into rows with no site evidence (page id ``<id>#page``), as the page-level
fallback sees it; they are scored as ``CORPUS#page`` and learnt from only with
``--page-row-weight`` > 0.

It prints site-grouped cross-validated page F1 (folds never share a site, so a figure is
what the scorer gives on sites it was not learnt from) and, with ``--out``, writes the
scorer learnt on all rows (boosted trees, scikit-learn, exported to the package's JSON
tree format: ``--out sst_cleaner/data/default_scorer.json``). Needs scikit-learn
(training only; the package evaluates the trees with numpy). The corpora are read from
../shared only here, never shipped.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
from collections import Counter, defaultdict

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from sst_cleaner.dom import parse_html  # noqa: E402
from sst_cleaner.hybrid import FEATURE_NAMES, cetd_region, sentence_features  # noqa: E402
from sst_cleaner.sentences import gold_share  # noqa: E402
from sst_cleaner.site_stats import SiteStats, analyse_page  # noqa: E402
from sst_cleaner.text import words  # noqa: E402


def load_corpus(root: str, name: str):
    sys.path.insert(0, os.path.join(root, "..", "bench"))
    from pages import load_manifest, read_gold, read_page  # type: ignore

    man = os.path.join(root, name, "manifest.jsonl")
    rows = load_manifest(man)
    by_site = defaultdict(list)
    for r in rows:
        by_site[r["site"] or r["id"]].append(r)
    return by_site, read_page, read_gold


def build_rows(data_root: str, corpora: list[str], max_docs_pages: int = 40):
    X, y, w, page_ids, groups, ntok = [], [], [], [], [], []
    gold_tokens = {}
    corpus_of = {}
    for corpus in corpora:
        by_site, read_page, read_gold = load_corpus(data_root, corpus)
        for site, rows in by_site.items():
            if corpus == "docs-dev":
                rng = random.Random(0)
                rows = list(rows)
                rng.shuffle(rows)
                rows = rows[:max_docs_pages]
            analyses = []
            for r in rows:
                html = read_page(r)[0]
                pa = analyse_page(parse_html(html, url=r.get("url")))
                analyses.append((r, pa))
            stats = SiteStats()
            fit_set = analyses[:20] if corpus == "docs-dev" else analyses
            if corpus != "single-dev":
                for _, pa in fit_set:
                    stats.add(pa)
            for k, (r, pa) in enumerate(analyses):
                view = stats.page_view(pa) if stats.n_pages else None
                region = cetd_region(pa, view)
                gseq = words(read_gold(r))
                gold = Counter(gseq)
                gold_tokens[r["id"]] = gold
                corpus_of[r["id"]] = corpus
                tri = set(zip(gseq, gseq[1:], gseq[2:]))
                joined = " " + " ".join(gseq) + " "
                # a page of a multi-page corpus is also learnt from with no site evidence
                # (as the page-level fallback meets it: a site too small for a model, a
                # crawl's first pages), under its own id "<id>#page", so that the
                # fallback is not learnt from single-dev's 57 pages alone
                settings = [(r["id"], view, region)]
                if view is not None:
                    settings.append((r["id"] + PAGE_SUFFIX, None, cetd_region(pa, None)))
                if view is not None and corpus != "docs-dev" and len(analyses) > 1:
                    # and judged by one other page only (a two-page site, or a site's
                    # first fitted page): the next page of the site, under "<id>#pair"
                    one = SiteStats()
                    one.add(analyses[(k + 1) % len(analyses)][1])
                    v1 = one.page_view(pa)
                    settings.append((r["id"] + PAIR_SUFFIX, v1, cetd_region(pa, v1)))
                for pid, v, reg in settings:
                    if pid != r["id"]:
                        gold_tokens[pid] = gold
                        corpus_of[pid] = corpus + pid[len(r["id"]):]
                    for b, s, f in sentence_features(v, pa, reg):
                        toks = words(s.text)
                        frac = gold_share(toks, tri, joined)
                        X.append(f)
                        y.append(frac)
                        w.append(len(toks))
                        page_ids.append(pid)
                        groups.append(f"{corpus}/{site}")
                        ntok.append(toks)
            print(f"  {corpus}/{site}: {len(analyses)} pages", file=sys.stderr)
    return (np.array(X, dtype=float), np.array(y), np.array(w, dtype=float), page_ids, groups, ntok,
            gold_tokens, corpus_of)


#: page ids (and corpus names) of the rows learnt with the site evidence left out
PAGE_SUFFIX = "#page"
#: ... and of the rows judged by one other page of the site only
PAIR_SUFFIX = "#pair"


def page_f1(pred_mask, page_ids, ntok, gold_tokens):
    pred = defaultdict(Counter)
    for keep, pid, toks in zip(pred_mask, page_ids, ntok):
        if keep:
            pred[pid].update(toks)
    out = {}
    for pid, gold in gold_tokens.items():
        p = pred.get(pid, Counter())
        if not p and not gold:
            out[pid] = 1.0
            continue
        common = sum((p & gold).values())
        if not common:
            out[pid] = 0.0
            continue
        P = common / sum(p.values())
        R = common / sum(gold.values())
        out[pid] = 2 * P * R / (P + R)
    return out


def export_hgb(model, names) -> dict:
    """sklearn HistGradientBoostingClassifier -> the TreeEnsemble JSON of sst_cleaner.hybrid."""
    trees = []
    for (pred,) in model._predictors:
        nodes = pred.nodes
        trees.append({
            "feature": [int(v) for v in nodes["feature_idx"]],
            "threshold": [float(v) for v in nodes["num_threshold"]],
            "left": [int(v) for v in nodes["left"]],
            "right": [int(v) for v in nodes["right"]],
            "leaf": [bool(v) for v in nodes["is_leaf"]],
            "value": [float(v) for v in nodes["value"]],
            "depth": int(nodes["depth"].max()),
        })
    return {"features": list(names), "baseline": float(np.ravel(model._baseline_prediction)[0]), "trees": trees}


HGB = dict(max_depth=5, max_iter=60, learning_rate=0.1, min_samples_leaf=100)


def fit_hgb(X, y, w):
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(random_state=0, **HGB).fit(X, y, sample_weight=w)


def report(name, mask, page_ids, ntok, gold_tokens, corpus_of, corpora):
    f1 = page_f1(mask, page_ids, ntok, gold_tokens)
    out = []
    for corpus in corpora:
        ids = [pid for pid in gold_tokens if corpus_of[pid] == corpus]
        if ids:
            out.append(f"{corpus}={sum(f1[i] for i in ids) / len(ids):.3f}")
    print(f"{name:<28}", *out, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--corpora", default="portal,sites-dev,docs-dev,single-dev")
    ap.add_argument("--cache", default=None)
    ap.add_argument("--label-threshold", type=float, default=0.5)
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--weights", choices=["tokens", "page"], default="page")
    ap.add_argument("--out", default=None, help="write the scorer JSON here")
    ap.add_argument("--page-row-weight", type=float, default=0.0,
                    help="weight of the multi-page corpora's pages seen with no site evidence "
                         "(0: the no-evidence case is learnt from single-dev alone); "
                         "those rows are scored (CORPUS#page) either way")
    ap.add_argument("--pair-row-weight", type=float, default=0.0,
                    help="weight of the rows of pages judged by one other page of their site "
                         "(0: not learnt from); scored (CORPUS#pair) either way")
    args = ap.parse_args()
    import json
    import pickle  # benchmark-only cache of our own numbers; never used for model files

    if args.cache and os.path.exists(args.cache):
        with open(args.cache, "rb") as fh:
            blob = pickle.load(fh)
    else:
        blob = build_rows(args.data, args.corpora.split(","))
        if args.cache:
            with open(args.cache, "wb") as fh:
                pickle.dump(blob, fh)
    X, yf, w, page_ids, groups, ntok, gold_tokens, corpus_of = blob[:8]
    corpora = args.corpora.split(",")
    y = (yf >= args.label_threshold).astype(int)
    sw = w
    if args.weights == "page":  # every page counts the same (the score is a macro average)
        tot = defaultdict(float)
        for pid, t in zip(page_ids, w):
            tot[pid] += t
        sw = np.array([t / tot[pid] for pid, t in zip(page_ids, w)]) * 1000
    sites = sorted(set(groups))
    rng = random.Random(0)
    rng.shuffle(sites)
    fold_of = {s: i % args.folds for i, s in enumerate(sites)}
    fold = np.array([fold_of[g] for g in groups])
    learn = np.ones(len(y), bool)
    for suffix, weight in ((PAGE_SUFFIX, args.page_row_weight), (PAIR_SUFFIX, args.pair_row_weight)):
        rows = np.array([pid.endswith(suffix) for pid in page_ids])
        sw = np.where(rows, sw * weight, sw)
        if weight <= 0:
            learn &= ~rows
    p1 = np.zeros(len(y))
    for k in range(args.folds):
        tr = (fold != k) & learn
        p1[fold == k] = fit_hgb(X[tr], y[tr], sw[tr]).predict_proba(X[fold == k])[:, 1]
    shown = corpora + [c + suf for suf in (PAGE_SUFFIX, PAIR_SUFFIX) for c in corpora
                       if c + suf in set(corpus_of.values())]
    report("all text", np.ones(len(y), bool), page_ids, ntok, gold_tokens, corpus_of, shown)
    report("cetd (template zeroed)", X[:, FEATURE_NAMES.index("in_cetd")] > 0.5, page_ids, ntok, gold_tokens,
           corpus_of, shown)
    for th in (0.3, 0.4, 0.5, 0.6):
        report(f"scorer (site-grouped CV) th={th}", p1 >= th, page_ids, ntok, gold_tokens, corpus_of, shown)
    if args.out:
        m1 = fit_hgb(X[learn], y[learn], sw[learn])
        spec = {"trained_on": corpora, "page_row_weight": args.page_row_weight, "hgb": HGB,
                "label_threshold": args.label_threshold, "weights": args.weights,
                "stage1": export_hgb(m1, FEATURE_NAMES)}
        if args.pair_row_weight > 0:
            spec["pair_row_weight"] = args.pair_row_weight
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(spec, fh, separators=(",", ":"))
        print("wrote", args.out)


if __name__ == "__main__":
    main()
