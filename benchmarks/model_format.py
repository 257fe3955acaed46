"""The compact model format (version 2) against the full one (version 1): size, output,
and what learning after a load loses.

    python benchmarks/model_format.py --size [CORPUS ...]    # 500 pages as one model
    python benchmarks/model_format.py [CORPUS ...]           # per site, see below

``--size``: the corpus's first 500 pages fitted as one model (as ``ab_fit.py`` does),
saved in both formats: the bytes of each file, and the CPU time of loading each.

Otherwise, for every site of each corpus (default: sites-dev, news-eras, portal,
docs-dev under ``../shared/datasets``), with the default method:

1. fit on every other page of the site (``pages[::2]``), save the model in version 1
   and in version 2 and load each back; clean every page of the site with the model in
   memory, the one loaded from version 1 and the one loaded from version 2, and compare
   the digests of the results (text, Markdown, status, blocks): what the new format
   must not change;
2. ``partial_fit`` the other pages (``pages[1::2]``) into each of the three, clean every
   page again, and score each against the gold text (F1 macro over pages and over
   sites): what learning into a loaded model loses.

Version 1 files are written here from the model in memory the way version 1 wrote them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATASETS = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "datasets"))
sys.path.insert(0, os.path.dirname(HERE))  # the checkout, when it is not installed

CORPORA = ("sites-dev", "news-eras", "portal", "docs-dev")

from sst_cleaner.tools.model_versions import version_1  # noqa: E402 (after the path)


def _save_load(cleaner, folder: str, name: str, data: dict):
    from sst_cleaner import SiteCleaner
    from sst_cleaner.engine._model_io import write_json_atomic

    path = os.path.join(folder, name)
    write_json_atomic(path, data, fsync=False)
    return SiteCleaner.load(path), os.path.getsize(path)


def _digest(result) -> str:
    blocks = [(b.xpath, b.label) for b in result.blocks]
    raw = json.dumps([result.text or "", result.markdown or "", result.status, blocks], ensure_ascii=False)
    return hashlib.sha1(raw.encode("utf-8")).hexdigest()


def _new_cleaner():
    from sst_cleaner import SiteCleaner

    return SiteCleaner(page_time_budget=None, site_time_budget=None)


def sizes(corpus: str, n_pages: int) -> None:
    from sst_cleaner import SiteCleaner
    from sst_cleaner.tools.bench._scoring import find_manifests, load_corpus

    pages = load_corpus(find_manifests(corpus)[0]).pages[:n_pages]
    cleaner = _new_cleaner().fit([(p.url, p.html) for p in pages])
    with tempfile.TemporaryDirectory() as folder:
        _, old = _save_load(cleaner, folder, "v1.json", version_1(cleaner))
        _, new = _save_load(cleaner, folder, "v2.json", cleaner.to_dict())
        # CPU time of a load (read, check, rebuild), best of 3 each, interleaved
        loads: dict[str, list[float]] = {"v1.json": [], "v2.json": []}
        for _ in range(3):
            for name, times in loads.items():
                t = time.process_time()
                SiteCleaner.load(os.path.join(folder, name))
                times.append(time.process_time() - t)
    t_old, t_new = min(loads["v1.json"]), min(loads["v2.json"])
    print(
        f"{os.path.basename(corpus.rstrip('/'))}: {len(pages)} pages as one model: "
        f"version 1 {old / 1e6:.2f} MB, version 2 {new / 1e6:.2f} MB ({new / old:.3f}); "
        f"load {t_old:.2f} s -> {t_new:.2f} s CPU ({t_new / t_old:.2f})"
    )


def corpus_report(corpus: str) -> dict:
    from sst_cleaner.tools.bench._scoring import find_manifests, load_corpus, score_pages

    loaded = load_corpus(find_manifests(corpus)[0])
    kinds = ("memory", "v1", "v2")
    preds: dict[str, dict[str, str]] = {k: {} for k in kinds}
    same = {"v1=v2": 0, "memory=v2": 0, "after: v1=v2": 0}
    n_pages = 0
    size = {"v1": 0, "v2": 0}
    all_pages = []
    with tempfile.TemporaryDirectory() as folder:
        for _site, pages in sorted(loaded.sites.items()):
            if len(pages) < 2:
                continue
            all_pages.extend(pages)
            inputs = [(p.url, p.html) for p in pages]
            memory = _new_cleaner().fit(inputs[::2])
            old, old_size = _save_load(memory, folder, "v1.json", version_1(memory))
            new, new_size = _save_load(memory, folder, "v2.json", memory.to_dict())
            size["v1"] += old_size
            size["v2"] += new_size
            cleaners = {"memory": memory, "v1": old, "v2": new}
            before = {k: [_digest(c.clean(html, url=url)) for url, html in inputs] for k, c in cleaners.items()}
            n_pages += len(pages)
            same["v1=v2"] += sum(a == b for a, b in zip(before["v1"], before["v2"]))
            same["memory=v2"] += sum(a == b for a, b in zip(before["memory"], before["v2"]))
            after = {}
            for kind, cleaner in cleaners.items():
                for url, html in inputs[1::2]:
                    cleaner.partial_fit(html, url=url)
                results = [cleaner.clean(html, url=url) for url, html in inputs]
                after[kind] = [_digest(r) for r in results]
                for page, r in zip(pages, results):
                    preds[kind][page.id] = r.text or ""
            same["after: v1=v2"] += sum(a == b for a, b in zip(after["v1"], after["v2"]))
    scores = {k: score_pages(preds[k], all_pages) for k in kinds}
    return {"pages": n_pages, "same": same, "size": size, "scores": scores}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpora", nargs="*", help="corpus folders (default: the four dev corpora)")
    ap.add_argument("--size", action="store_true", help="only the size of a model of the first --pages pages")
    ap.add_argument("--pages", type=int, default=500)
    args = ap.parse_args(argv)
    corpora = args.corpora or [os.path.join(DATASETS, c) for c in (("sites-dev", "docs-dev") if args.size else CORPORA)]
    for corpus in corpora:
        if args.size:
            sizes(corpus, args.pages)
            continue
        t0 = time.perf_counter()
        rep = corpus_report(corpus)
        n = rep["pages"]
        name = os.path.basename(corpus.rstrip("/"))
        spent = time.perf_counter() - t0
        print(f"{name}: {n} pages, half learnt by fit, half by partial_fit after the save ({spent:.0f} s)")
        print(
            f"  saved half-site models: version 1 {rep['size']['v1'] / 1e6:.2f} MB, "
            f"version 2 {rep['size']['v2'] / 1e6:.2f} MB in all"
        )
        print("  identical cleans: " + ", ".join(f"{k} {v}/{n}" for k, v in rep["same"].items()))
        for kind, s in rep["scores"].items():
            print(f"  F1 after partial_fit, {kind:6}: pages {s.f1:.4f}, sites {s.site_f1:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
