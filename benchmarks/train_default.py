"""Learn (and honestly evaluate) the default method's two scorers.

    python benchmarks/train_default.py ../shared/datasets [--cache-dir /tmp/sst-rows]
        [--corpora portal,sites-dev,...,/work/data/api-dev]
        [--out sst_cleaner/engine/methods/sitestats/data/default_scorer.json]

The default method scores every sentence with one of two boosted-tree scorers:

* the **site scorer**, when the page's site has a model: every sentence of a multi-page
  corpus page, judged by the site's *other* pages (the model removes the page's own
  contribution, so this is the leave-one-out setting; docs sites are fitted on 20 pages,
  the crawl setting, and 40 pages are scored);
* the **page scorer**, when it has none (a site of one page, a cold start, an evicted
  site): every page of every corpus with the site evidence absent (rows ``<id>#page``).

A sentence is labelled content when at least half of its token trigrams are in the page's
gold text. Each corpus is scored in two ways, and both are printed per corpus and per
mode (``CORPUS`` = site rows, ``CORPUS#page`` = page rows):

* **leave-one-corpus-out** (LOCO): the scorers learnt on every other corpus score this one.
  This is the figure designs are chosen by: the corpora differ in era, language, site type
  and gold convention the way unseen crawls do;
* **site-grouped CV** (folds never share a site).

With ``--out`` it writes both scorers learnt on all rows (scikit-learn's
HistGradientBoosting, exported to the package's JSON tree format; the package evaluates
the trees with numpy). The corpora are read from ../shared (or the given folders) only
here, never shipped. Rows are cached per corpus (``--cache-dir``; pickles of our own
numbers, benchmark-only, never model files).
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import pickle  # benchmark-only cache of our own numbers; never used for model files
import random
import sys
import time
from collections import Counter, defaultdict

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from sst_cleaner.engine._dom import parse_html  # noqa: E402
from sst_cleaner.engine._text import words  # noqa: E402
from sst_cleaner.engine.methods.sitestats.hybrid import FEATURE_NAMES, cetd_region, sentence_features  # noqa: E402
from sst_cleaner.engine.methods.sitestats.site_stats import SiteStats, analyse_page  # noqa: E402
from sst_cleaner.engine.methods.sst.sentences import gold_share  # noqa: E402

#: corpora of one page per site: page rows only
PAGE_CORPORA = ("single-dev", "single-chaos")
#: corpora of generated documentation sites (these names, or starting "api-": the API
#: reference corpora of build_api_corpora.py): fitted on FIT_DOCS pages, DOCS_PAGES scored
DOCS_CORPORA = ("docs-dev", "api-dev")
FIT_DOCS, DOCS_PAGES = 20, 40
DEFAULT_CORPORA = "portal,sites-dev,docs-dev,single-dev,news-eras,single-chaos"
#: page ids (and corpus names) of the rows learnt with the site evidence left out
PAGE_SUFFIX = "#page"

HGB = dict(max_depth=5, max_iter=60, learning_rate=0.1, min_samples_leaf=100)
PAGE_HGB = dict(max_depth=5, max_iter=60, learning_rate=0.1, min_samples_leaf=100)


def is_docs(name: str) -> bool:
    return name in DOCS_CORPORA or name.startswith("api-")


def corpus_manifest(data_root: str, corpus: str) -> tuple[str, str]:
    """(name, manifest path): a corpus is a folder name under data_root or a folder path."""
    folder = corpus if os.path.isabs(corpus) else os.path.join(data_root, corpus)
    return os.path.basename(os.path.normpath(folder)), os.path.join(folder, "manifest.jsonl")


def _bench_modules(data_root: str):
    sys.path.insert(0, os.path.join(data_root, "..", "bench"))
    from pages import load_manifest, read_gold, read_page  # type: ignore

    return load_manifest, read_page, read_gold


def corpus_rows(data_root: str, corpus: str) -> dict:
    """Every sentence row of one corpus: features, label share, tokens, page id, site."""
    load_manifest, read_page, read_gold = _bench_modules(data_root)
    name, manifest = corpus_manifest(data_root, corpus)
    by_site = defaultdict(list)
    for r in load_manifest(manifest):
        by_site[r["site"] or r["id"]].append(r)
    out = dict(X=[], y=[], w=[], pid=[], group=[], tok=[], gold={}, corpus={})
    for site, rows in sorted(by_site.items()):
        if is_docs(name):
            rows = list(rows)
            random.Random(0).shuffle(rows)
            rows = rows[:DOCS_PAGES]
        analyses = [(r, analyse_page(parse_html(read_page(r)[0], url=r.get("url")))) for r in rows]
        stats = SiteStats()
        if name not in PAGE_CORPORA:
            for _, pa in analyses[:FIT_DOCS] if is_docs(name) else analyses:
                stats.add(pa)
        for r, pa in analyses:
            gseq = words(read_gold(r))
            tri = set(zip(gseq, gseq[1:], gseq[2:]))
            joined = " " + " ".join(gseq) + " "
            settings = [(r["id"] + PAGE_SUFFIX, None)]
            if stats.n_pages:
                settings.append((r["id"], stats.page_view(pa)))
            for pid, view in settings:
                out["gold"][pid] = Counter(gseq)
                out["corpus"][pid] = name + pid[len(r["id"]) :]
                for _b, s, f in sentence_features(view, pa, cetd_region(pa, view)):
                    toks = words(s.text)
                    out["X"].append(f)
                    out["y"].append(gold_share(toks, tri, joined))
                    out["w"].append(len(toks))
                    out["pid"].append(pid)
                    out["group"].append(f"{name}/{site}")
                    out["tok"].append(toks)
        print(f"  {name}/{site}: {len(analyses)} pages", file=sys.stderr)
    return out


def feature_version() -> str:
    """Changes whenever the feature code does, so a stale cache is never read."""
    import inspect

    from sst_cleaner.engine.methods.sitestats import hybrid

    h = hashlib.sha256()
    # the whole module: the features are computed by many small groups and page helpers
    h.update(inspect.getsource(hybrid).encode())
    h.update(repr(FEATURE_NAMES).encode())
    from sst_cleaner.engine import _dom
    from sst_cleaner.engine.methods import cetd
    from sst_cleaner.engine.methods.sitestats import site_stats

    # and every module of the method's package (page context, regions, scorer) beside
    # those the pages go through first (every module of the engine's own folder: page
    # preparation, segmenting, text)
    def modules(folder: str) -> list[str]:
        return sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".py"))

    engine = modules(os.path.dirname(os.path.abspath(_dom.__file__)))
    package = modules(os.path.dirname(os.path.abspath(site_stats.__file__)))
    for path in package + engine + [cetd.__file__]:
        with open(path, "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()[:12]


def load_rows(data_root: str, corpora: list[str], cache_dir: str | None) -> dict:
    version = feature_version()  # read once: the files may change while rows are built
    parts = []
    for corpus in corpora:
        name, _ = corpus_manifest(data_root, corpus)
        path = os.path.join(cache_dir, f"{name}-{version}.pkl") if cache_dir else None
        if path and os.path.exists(path):
            with open(path, "rb") as fh:
                part = pickle.load(fh)
        else:
            t0 = time.time()
            part = corpus_rows(data_root, corpus)
            print(f"{name}: {len(part['y'])} rows in {time.time() - t0:.0f} s", file=sys.stderr)
            if path:
                os.makedirs(cache_dir, exist_ok=True)
                with open(path, "wb") as fh:
                    pickle.dump(part, fh)
        parts.append(part)
    rows = dict(gold={}, corpus={})
    for key in ("X", "y", "w", "pid", "group", "tok"):
        rows[key] = [v for p in parts for v in p[key]]
    for p in parts:
        for key in ("gold", "corpus"):
            rows[key].update(p[key])
    rows["X"] = np.array(rows["X"], dtype=float)
    rows["y"] = np.array(rows["y"])
    rows["w"] = np.array(rows["w"], dtype=float)
    return rows


def page_f1(pred_mask, page_ids, ntok, gold_tokens) -> dict:
    pred = defaultdict(Counter)
    for keep, pid, toks in zip(pred_mask, page_ids, ntok):
        if keep:
            pred[pid].update(toks)
    out = {}
    for pid, gold in gold_tokens.items():
        p = pred.get(pid, Counter())
        common = sum((p & gold).values())
        if not p and not gold:
            out[pid] = 1.0
        elif not common:
            out[pid] = 0.0
        else:
            P, R = common / sum(p.values()), common / sum(gold.values())
            out[pid] = 2 * P * R / (P + R)
    return out


def export_hgb(model, names) -> dict:
    """sklearn HistGradientBoostingClassifier -> the TreeEnsemble JSON of
    sst_cleaner.engine.methods.sitestats.hybrid."""
    trees = []
    for (pred,) in model._predictors:
        nodes = pred.nodes
        trees.append(
            {
                "feature": [int(v) for v in nodes["feature_idx"]],
                "threshold": [float(v) for v in nodes["num_threshold"]],
                "left": [int(v) for v in nodes["left"]],
                "right": [int(v) for v in nodes["right"]],
                "leaf": [bool(v) for v in nodes["is_leaf"]],
                "value": [float(v) for v in nodes["value"]],
                "depth": int(nodes["depth"].max()),
            }
        )
    return {"features": list(names), "baseline": float(np.ravel(model._baseline_prediction)[0]), "trees": trees}


#: models averaged per scorer (their log-odds), each seeing a random share of the
#: features at every split; 1 = a single model on all features
BAG = 1
BAG_FEATURES = 0.7


class Bagged:
    """The mean log-odds of several boosted models: one exported ensemble holding every
    model's trees, their leaf values and baselines divided by the number of models."""

    def __init__(self, models: list):
        self.models = models

    def predict_proba(self, X) -> np.ndarray:
        z = np.mean([m.decision_function(X) for m in self.models], axis=0)
        p = 1.0 / (1.0 + np.exp(-z))
        return np.stack([1.0 - p, p], axis=1)


def fit_hgb(X, y, w, params):
    from sklearn.ensemble import HistGradientBoostingClassifier

    if BAG <= 1:
        return HistGradientBoostingClassifier(random_state=0, **params).fit(X, y, sample_weight=w)
    return Bagged(
        [
            HistGradientBoostingClassifier(random_state=k, max_features=BAG_FEATURES, **params).fit(
                X, y, sample_weight=w
            )
            for k in range(BAG)
        ]
    )


def _set_shape(args) -> None:
    """--bag, --iters and --rate into the module's settings, which the forked fold
    workers inherit."""
    global BAG
    BAG = args.bag
    for params in (HGB, PAGE_HGB):
        if args.iters:
            params["max_iter"] = args.iters
        if args.rate:
            params["learning_rate"] = args.rate


def export_model(model, names) -> dict:
    """A single or bagged model -> one TreeEnsemble JSON (bagged: the mean log-odds)."""
    if not isinstance(model, Bagged):
        return export_hgb(model, names)
    parts = [export_hgb(m, names) for m in model.models]
    k = len(parts)
    trees = [dict(t, value=[v / k for v in t["value"]]) for part in parts for t in part["trees"]]
    return {"features": list(names), "baseline": sum(p["baseline"] for p in parts) / k, "trees": trees}


def page_weights(page_ids, w) -> np.ndarray:
    """Every page counts the same (the score is a macro average over pages)."""
    tot = defaultdict(float)
    for pid, t in zip(page_ids, w):
        tot[pid] += t
    return np.array([t / tot[pid] for pid, t in zip(page_ids, w)]) * 1000


def corpus_matches(corpus: str, pattern: str) -> bool:
    """Whether a row's corpus ("name" or "name#page") is meant by a --corpus-weight
    pattern: the exact name with #page, else the name or shell pattern in both modes."""
    if pattern.endswith(PAGE_SUFFIX):
        return corpus == pattern
    return fnmatch.fnmatchcase(corpus.removesuffix(PAGE_SUFFIX), pattern)


def balance_corpora(sw, page_ids, corpus_of) -> np.ndarray:
    """Every corpus (and mode) weighs the same in all, whatever its number of pages."""
    pages = defaultdict(set)
    for pid in page_ids:
        pages[corpus_of[pid]].add(pid)
    mean = sum(len(v) for v in pages.values()) / len(pages)
    return np.array([w * mean / len(pages[corpus_of[pid]]) for w, pid in zip(sw, page_ids)])


def predict_held_out(rows, held, params_site, params_page, X=None) -> np.ndarray:
    """Probabilities for the rows where ``held`` is True, from scorers learnt on the rest;
    site rows and page rows each by their own scorer."""
    X = rows["X"] if X is None else X
    y, sw, is_page = rows["ylab"], rows["sw"], rows["is_page"]
    p = np.zeros(len(y))
    for kind, params in ((False, params_site), (True, params_page)):
        part = is_page == kind
        train, test = part & ~held, part & held
        if test.any() and train.any():
            p[test] = fit_hgb(X[train], y[train], sw[train], params).predict_proba(X[test])[:, 1]
    return p


_SHARED: dict = {}  # what forked fold workers read (inherited, never pickled)


def _fold(held_mask_key) -> np.ndarray:
    rows, X, masks = _SHARED["rows"], _SHARED["X"], _SHARED["masks"]
    held = masks[held_mask_key]
    return predict_held_out(rows, held, HGB, PAGE_HGB, X)[held]


def held_out_predictions(rows, X, masks: dict, jobs: int = 1) -> np.ndarray:
    """For each mask, its rows scored by scorers learnt on the rows outside it; the folds
    run in ``jobs`` forked processes."""
    p = np.zeros(len(rows["y"]))
    _SHARED.update(rows=rows, X=X, masks=masks)
    keys = list(masks)
    if jobs > 1:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            parts = pool.map(_fold, keys)
    else:
        parts = [_fold(k) for k in keys]
    for k, part in zip(keys, parts):
        p[masks[k]] = part
    return p


def loco(rows, X, corpora, corpus_of_row, jobs: int = 1) -> np.ndarray:
    """Each corpus's rows scored by scorers learnt on every other corpus."""
    return held_out_predictions(rows, X, {c: corpus_of_row == c for c in corpora}, jobs)


def dump_rows(path, rows, p) -> None:
    names = FEATURE_NAMES
    with open(path, "w", encoding="utf-8") as fh:
        for i, pid in enumerate(rows["pid"]):
            feats = {n: round(float(v), 3) for n, v in zip(names, rows["X"][i])}
            fh.write(
                json.dumps(
                    {
                        "pid": pid,
                        "p": round(float(p[i]), 3),
                        "y": round(float(rows["y"][i]), 2),
                        "text": " ".join(rows["tok"][i]),
                        "f": feats,
                    }
                )
                + "\n"
            )


def page_partner(rows) -> np.ndarray:
    """For every site row, the index of the same sentence's page row (the page judged
    alone), -1 where there is none; a page's site rows and page rows list the same
    sentences in the same order."""
    first: dict = {}
    count: dict = defaultdict(int)
    for i, pid in enumerate(rows["pid"]):
        if pid not in first:
            first[pid] = i
        count[pid] += 1
    partner = np.full(len(rows["pid"]), -1)
    for pid, i0 in first.items():
        if pid.endswith(PAGE_SUFFIX):
            continue
        j0 = first.get(pid + PAGE_SUFFIX)
        if j0 is not None and count[pid + PAGE_SUFFIX] == count[pid]:
            partner[i0 : i0 + count[pid]] = np.arange(j0, j0 + count[pid])
    return partner


def blended(p, partner, weight: float) -> np.ndarray:
    """Site rows' probabilities mixed with the page scorer's verdict on the same
    sentence: ``weight`` * site + (1 - weight) * page."""
    out = p.copy()
    has = partner >= 0
    out[has] = weight * p[has] + (1 - weight) * p[partner[has]]
    return out


def comment_prose(X) -> np.ndarray:
    """Rows the method's comment rule matches: prose of four words or more, mostly not
    link text, in a container named as comments (see hybrid._is_comment_prose)."""
    col = FEATURE_NAMES.index
    return (
        (X[:, col("hint_comment")] > 0.5)
        & (X[:, col("log_sent_words")] >= np.log1p(4) - 1e-9)
        & (X[:, col("link_density")] < 0.5)
    )


def main_matter(X) -> np.ndarray:
    """Rows in the page's main container, not named as boilerplate, mostly not link text
    (see hybrid._main_matter)."""
    col = FEATURE_NAMES.index
    return (X[:, col("in_main")] > 0.5) & (X[:, col("hint_boiler")] < 0.5) & (X[:, col("link_density")] < 0.5)


def recurring_boilerplate(X) -> np.ndarray:
    """Rows the method's boilerplate rule matches: a sentence on >= 2 other pages in a
    wholly template node whose container is named as boilerplate (see
    hybrid._recurring_boilerplate)."""
    col = FEATURE_NAMES.index
    return (X[:, col("hint_boiler")] > 0.5) & (X[:, col("sent_rec2")] > 0.5) & (X[:, col("node_share")] >= 0.99)


def nearly_empty_fallback(p, rows, partner, th: float, share: float, factor: float) -> np.ndarray:
    """Site rows' verdicts with the method's nearly-empty rule: a page whose site verdict
    keeps fewer than 10 words, or less than ``share`` of the page's words, takes the page
    scorer's verdict when that keeps more (``factor`` times more past 10 words)."""
    keep = p >= th
    out = keep.copy()
    by_pid: dict = defaultdict(list)
    for i, pid in enumerate(rows["pid"]):
        if partner[i] >= 0:
            by_pid[pid].append(i)
    w = rows["w"]
    for idx in by_pid.values():
        idx = np.array(idx)
        kept, total = w[idx][keep[idx]].sum(), w[idx].sum()
        if kept >= 10 and kept >= share * total:
            continue
        alone = keep[partner[idx]]
        if w[idx][alone].sum() > (kept if kept < 10 else factor * kept):
            out[idx] = alone
    return out


def figure_text(rows) -> np.ndarray:
    """Rows the method's figure rule matches: text inside a figure or its caption, on
    pages where figures hold under half of the words (see hybrid._apply_rules)."""
    fig = rows["X"][:, FEATURE_NAMES.index("in_figure")] > 0.5
    words: dict = defaultdict(float)
    in_fig: dict = defaultdict(float)
    for pid, w, f in zip(rows["pid"], rows["w"], fig):
        words[pid] += w
        in_fig[pid] += w * f
    small = np.array([words[pid] > 2 * in_fig[pid] for pid in rows["pid"]])
    return fig & small


def names_say(rows) -> np.ndarray:
    """Rows of pages whose prose container is not itself named as boilerplate (by words):
    elsewhere names outside it say nothing (see hybrid._apply_rules)."""
    X, col = rows["X"], FEATURE_NAMES.index
    top = X[:, col("in_top")] > 0.5
    named = X[:, col("hint_boiler")] > 0.5
    top_words: dict = defaultdict(float)
    named_words: dict = defaultdict(float)
    for pid, w, t, n in zip(rows["pid"], rows["w"], top, named):
        if t:
            top_words[pid] += w
            named_words[pid] += w * n
    return np.array([not (top_words[pid] and 2 * named_words[pid] >= top_words[pid]) for pid in rows["pid"]])


def product_verdict(p, rows, partner, args) -> np.ndarray:
    """What the method keeps, from held-out probabilities ``p``: site rows blended with
    the page scorer's verdict by the cohort's trust (--cohort-trust), the two convention
    rules (--comment-rule, --boiler-rule), and the rescue of pages judged alone that keep
    (almost) nothing (--rescue), and the page scorer's say where the page's main container
    recurs (--main-recurring); see hybrid.HybridMethod._score."""
    X, col = rows["X"], FEATURE_NAMES.index
    has = partner >= 0
    site_p = p.copy()
    doubt = np.zeros(len(p), bool)
    if args.main_recurring:
        doubt |= has & (X[:, col("main_tmpl")] >= args.main_recurring) & main_matter(X)
    if args.wide_recurring:
        wide = (X[:, col("in_wide")] > 0.5) & (X[:, col("hint_boiler")] < 0.5)
        doubt |= has & (X[:, col("wide_tmpl")] >= args.wide_recurring) & wide
    site_p[doubt] = np.maximum(p[doubt], p[partner[doubt]])
    q = site_p.copy()
    if args.cohort_trust:
        trust = np.clip(X[:, col("cohort")] / args.cohort_trust, 0.0, 1.0)
        q[has] = trust[has] * site_p[has] + (1 - trust[has]) * p[partner[has]]
    if args.comment_rule:
        q[X[:, col("hint_comment")] > 0.5] = 0.0
    if args.boiler_rule:
        boiler = recurring_boilerplate(X) & ~rows["is_page"]
        outside = (X[:, col("hint_boiler")] > 0.5) & (X[:, col("in_top")] < 0.5) & names_say(rows)
        q[boiler | outside] = 0.0
    if args.figure_rule:
        q[figure_text(rows)] = 0.0
    keep = q >= args.threshold
    if args.rescue:
        by_pid: dict = defaultdict(list)
        for i, pid in enumerate(rows["pid"]):
            if pid.endswith(PAGE_SUFFIX):
                by_pid[pid].append(i)
        w = rows["w"]
        for idx in by_pid.values():
            idx = np.array(idx)
            best = q[idx].max()
            if w[idx][keep[idx]].sum() < 10 and best > 0:
                keep[idx] = q[idx] >= args.rescue * best
    return keep


def report_variants(label: str, p, rows, shown, args) -> None:
    """The experiments asked for (--blend, --empty-share, --comment-rule) on held-out
    probabilities ``p``."""
    partner = page_partner(rows)
    product = product_verdict(p, rows, partner, args)
    report(f"{label} product rules", product, rows, shown)
    if args.page_f1:
        f1 = page_f1(product, rows["pid"], rows["tok"], rows["gold"])
        args.page_scores[label] = {pid: {"corpus": rows["corpus"][pid], "f1": v} for pid, v in f1.items()}
    for weight in args.blend:
        report(f"{label} blend site={weight}", blended(p, partner, weight) >= args.threshold, rows, shown)
    for share in args.empty_share:
        mask = nearly_empty_fallback(p, rows, partner, args.threshold, share, 3.0)
        report(f"{label}, nearly empty below {share}", mask, rows, shown)
    if args.boiler_rule:
        col = FEATURE_NAMES.index
        X = rows["X"]
        boiler = recurring_boilerplate(X)
        base = p >= args.threshold
        if args.comment_rule:
            prose = comment_prose(X) & (X[:, col("in_top")] < 0.5)
            base = base & ~prose
        report(f"{label}, recurring boilerplate-named dropped", base & ~boiler, rows, shown)
    if args.comment_rule:
        prose = comment_prose(rows["X"])
        report(f"{label}, comment prose dropped", (p >= args.threshold) & ~prose, rows, shown)
        outside = prose & (rows["X"][:, FEATURE_NAMES.index("in_top")] < 0.5)
        report(f"{label}, comment prose outside top dropped", (p >= args.threshold) & ~outside, rows, shown)


def report(name, mask, rows, shown) -> dict:
    f1 = page_f1(mask, rows["pid"], rows["tok"], rows["gold"])
    out = {}
    for corpus in shown:
        ids = [pid for pid in rows["gold"] if rows["corpus"][pid] == corpus]
        if ids:
            out[corpus] = sum(f1[i] for i in ids) / len(ids)
    print(f"{name:<30}", " ".join(f"{c}={v:.3f}" for c, v in out.items()), flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument(
        "--corpora", default=DEFAULT_CORPORA, help="comma-separated folder names under DATA, or folder paths"
    )
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--label-threshold", type=float, default=0.5)
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--no-cv", action="store_true", help="leave-one-corpus-out only")
    ap.add_argument("--no-loco", action="store_true", help="site-grouped CV only")
    ap.add_argument("--out", default=None, help="write the scorer JSON here")
    ap.add_argument(
        "--dump",
        default=None,
        help="write the LOCO verdict on every row (page, kept, label, text) as JSON lines, "
        "for page-by-page study of the dev corpora",
    )
    ap.add_argument(
        "--balance-corpora",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="weigh every corpus (and mode) the same in all, not every page (chosen by leave-one-corpus-out)",
    )
    ap.add_argument("--jobs", type=int, default=1, help="folds learnt in this many processes")
    ap.add_argument(
        "--corpus-weight",
        type=lambda v: [x for x in v.split(",") if x],
        default=[],
        help="scale the weight of a corpus's rows when learning, e.g. single-dev#page=0.5,portal#page=0.5; "
        "a name without #page and a shell pattern (api-*=0.25) take both modes",
    )
    ap.add_argument(
        "--drop-features",
        type=lambda v: [x for x in v.split(",") if x],
        default=[],
        help="learn without these features (their column set to 0), to measure what they bring",
    )
    ap.add_argument(
        "--empty-share",
        type=lambda v: [float(x) for x in v.split(",") if x],
        default=[],
        help="also report the nearly-empty rule with these shares of the page's words",
    )
    ap.add_argument(
        "--boiler-rule",
        action="store_true",
        help="apply the boilerplate rule: boilerplate-named sentences outside the prose container, "
        "and recurring ones in wholly template nodes, dropped",
    )
    ap.add_argument("--comment-rule", action="store_true", help="also report with comment prose always dropped")
    ap.add_argument("--figure-rule", action="store_true", help="apply the figure rule: captions dropped")
    ap.add_argument(
        "--blend",
        type=lambda v: [float(x) for x in v.split(",") if x],
        default=[],
        help="also report site rows judged by weight*site + (1-weight)*page scorer, for each weight",
    )
    ap.add_argument(
        "--cohort-trust",
        type=float,
        default=0.0,
        help="blend site rows with the page scorer below this cohort (the method's COHORT_TRUSTED)",
    )
    ap.add_argument(
        "--rescue",
        type=float,
        default=0.0,
        help="pages judged alone keeping < 10 words keep rows scored >= this share of the best (RESCUE_SHARE)",
    )
    ap.add_argument(
        "--page-f1",
        default=None,
        metavar="PATH",
        help="write every page's F1 under the product rules, leave-one-corpus-out and CV, as JSON "
        "(for the tail: pages below an F1 threshold)",
    )
    ap.add_argument("--rows-only", action="store_true", help="build (and cache) the rows, then stop")
    ap.add_argument(
        "--main-recurring",
        type=float,
        default=0.0,
        help="product rules: where this share of the main container recurs, the page scorer's verdict may keep",
    )
    ap.add_argument(
        "--wide-recurring",
        type=float,
        default=0.0,
        help="product rules: where this share of the wide container recurs, the page scorer's verdict may keep",
    )
    ap.add_argument("--bag", type=int, default=BAG, help="models averaged per scorer (feature-subsampled)")
    ap.add_argument("--iters", type=int, default=None, help="boosting iterations per model")
    ap.add_argument("--rate", type=float, default=None, help="learning rate per model")
    args = ap.parse_args()
    _set_shape(args)
    args.page_scores = {}

    corpora = [corpus_manifest(args.data, c)[0] for c in args.corpora.split(",")]
    rows = load_rows(args.data, args.corpora.split(","), args.cache_dir)
    if args.rows_only:
        return
    rows["ylab"] = (rows["y"] >= args.label_threshold).astype(int)
    rows["sw"] = page_weights(rows["pid"], rows["w"])
    if args.balance_corpora:
        rows["sw"] = balance_corpora(rows["sw"], rows["pid"], rows["corpus"])
    for spec in args.corpus_weight:
        name, _, value = spec.partition("=")
        scale = np.array([corpus_matches(rows["corpus"][pid], name) for pid in rows["pid"]])
        rows["sw"] = np.where(scale, rows["sw"] * float(value), rows["sw"])
    for name in args.drop_features:
        rows["X"][:, FEATURE_NAMES.index(name)] = 0.0
    rows["is_page"] = np.array([pid.endswith(PAGE_SUFFIX) for pid in rows["pid"]])
    corpus_of_row = np.array([g.split("/", 1)[0] for g in rows["group"]])
    shown = [c + suf for c in corpora for suf in ("", PAGE_SUFFIX) if c + suf in set(rows["corpus"].values())]
    report("all text", np.ones(len(rows["y"]), bool), rows, shown)
    report("cetd (template zeroed)", rows["X"][:, FEATURE_NAMES.index("in_cetd")] > 0.5, rows, shown)
    if not args.no_loco:
        p1 = loco(rows, rows["X"], corpora, corpus_of_row, args.jobs)
        for th in sorted({args.threshold, 0.4, 0.6}):
            report(f"leave-one-corpus-out th={th}", p1 >= th, rows, shown)
        report_variants("LOCO", p1, rows, shown, args)
        if args.dump:
            dump_rows(args.dump, rows, p1)
    if not args.no_cv:
        sites = sorted(set(rows["group"]))
        random.Random(0).shuffle(sites)
        fold_of = {s: i % args.folds for i, s in enumerate(sites)}
        fold = np.array([fold_of[g] for g in rows["group"]])
        p = held_out_predictions(rows, rows["X"], {k: fold == k for k in range(args.folds)}, args.jobs)
        report(f"site-grouped CV th={args.threshold}", p >= args.threshold, rows, shown)
        report_variants("CV", p, rows, shown, args)
    if args.page_f1:
        with open(args.page_f1, "w", encoding="utf-8") as fh:
            json.dump(args.page_scores, fh)
    if args.out:
        site, page = ~rows["is_page"], rows["is_page"]
        m_site = fit_hgb(rows["X"][site], rows["ylab"][site], rows["sw"][site], HGB)
        m_page = fit_hgb(rows["X"][page], rows["ylab"][page], rows["sw"][page], PAGE_HGB)
        p = np.zeros(len(rows["y"]))
        p[site] = m_site.predict_proba(rows["X"][site])[:, 1]
        p[page] = m_page.predict_proba(rows["X"][page])[:, 1]
        report("in-sample (not evidence)", p >= args.threshold, rows, shown)
        spec = {
            "trained_on": corpora,
            "hgb": HGB,
            "page_hgb": PAGE_HGB,
            "bag": BAG,
            "label_threshold": args.label_threshold,
            "weights": "page",
            "stage1": export_model(m_site, FEATURE_NAMES),
            "page": export_model(m_page, FEATURE_NAMES),
        }
        spec["balance_corpora"] = args.balance_corpora
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(spec, fh, separators=(",", ":"))
        print("wrote", args.out)


if __name__ == "__main__":
    main()
