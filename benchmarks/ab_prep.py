"""Compare the whole-page scans of page preparation in two checkouts, in step.

    python benchmarks/ab_prep.py OLD_CHECKOUT NEW_CHECKOUT [--corpus DIR] [--pages 500]
                                 [--rounds 3]

A fit's time is mostly per-page steps of a few percent each, and on a loaded machine a
whole fit drifts by more than one such step saves (see ``ab_fit.py``). This times the
steps that scan each page's whole markup before libxml2 parses it, on the corpus's first
``--pages`` pages: the page's key (``_learnt.page_key``, which a fit computes for every
page), the attribute cap (``_attr_cap._cap_attributes``) and the sanitising
(``_dom._sanitize_text``). Each checkout runs in a fresh process, best of 3 per step, the
order swapped at every round; prints each round's seconds and the ratios NEW / OLD of
the sums over the rounds, and checks that both checkouts return the same values.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CORPUS = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "datasets", "sites-dev"))
STEPS = ("page_key", "cap_attributes", "sanitize")

_TIME = r"""
import hashlib, json, sys, time
from sst_cleaner.tools.bench._scoring import find_manifests, load_corpus
from sst_cleaner.engine._attr_cap import _cap_attributes, attribute_cap
from sst_cleaner.engine._dom import _sanitize_text
from sst_cleaner.engine._learnt import page_key
from sst_cleaner.engine._limits import Limits

pages = load_corpus(find_manifests(sys.argv[1])[0]).pages[: int(sys.argv[2])]
inputs = [(p.url, p.html) for p in pages]
max_attributes = Limits().max_attributes
steps = {
    "page_key": lambda: [page_key(p) for p in inputs],
    "cap_attributes": lambda: [_cap_attributes(h, attribute_cap(max_attributes, h.count("<"))) for _, h in inputs],
    "sanitize": lambda: [_sanitize_text(h)[0] for _, h in inputs],
}
out, digest = {}, hashlib.sha256()
for name, step in steps.items():
    best = None
    for _ in range(3):
        t = time.process_time()
        got = step()
        spent = time.process_time() - t
        best = spent if best is None else min(best, spent)
    out[name] = best
    digest.update(json.dumps(got).encode("utf-8", "surrogatepass"))
out["digest"] = digest.hexdigest()
print(json.dumps(out))
"""


def run(checkout: str, corpus: str, n_pages: int) -> dict:
    env = dict(os.environ, PYTHONPATH=checkout)
    argv = [sys.executable, "-c", _TIME, corpus, str(n_pages)]
    out = subprocess.run(argv, cwd=checkout, env=env, stdout=subprocess.PIPE, text=True, check=True).stdout
    return json.loads(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", help="checkout of the code before the change")
    ap.add_argument("new", help="checkout of the code after it")
    ap.add_argument("--corpus", default=DEFAULT_CORPUS, help="a corpus directory (with a manifest.jsonl)")
    ap.add_argument("--pages", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    checkouts = {"old": os.path.abspath(args.old), "new": os.path.abspath(args.new)}
    spent = {name: dict.fromkeys(STEPS, 0.0) for name in checkouts}
    digests = set()
    for r in range(args.rounds):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        line = []
        for name in order:
            got = run(checkouts[name], args.corpus, args.pages)
            digests.add(got["digest"])
            for step in STEPS:
                spent[name][step] += got[step]
            line.append(f"{name} " + ", ".join(f"{step} {got[step]:.3f}" for step in STEPS))
        print(f"round {r + 1}: " + "; ".join(line), flush=True)
    for step in STEPS:
        print(f"{step}: new / old {spent['new'][step] / spent['old'][step]:.3f}")
    old_all, new_all = sum(spent["old"].values()), sum(spent["new"].values())
    print(
        f"the three steps: {old_all / args.rounds:.3f} -> {new_all / args.rounds:.3f} s a round, "
        f"new / old {new_all / old_all:.3f}"
    )
    same = len(digests) == 1
    print("outputs: " + ("the same" if same else "DIFFERENT"))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
