"""Compare the fitting time of two checkouts of the project on the same pages, in step.

    python benchmarks/ab_fit.py OLD_CHECKOUT NEW_CHECKOUT [--corpus DIR] [--pages 500]
                                [--rounds 4] [--profile FILE]

Each fit runs in a fresh process (the caches a fit warms would make a second fit in one
process optimistic) on the corpus's first ``--pages`` pages (manifest order), as ONE
site; the two checkouts fit one after the other, the order swapped at every round (the
machine's speed drifts within minutes; in step, a drift hits both alike). Prints each fit's CPU seconds and the
ratio NEW / OLD, and whether the two saved models are the same JSON (a speed-up must not
change the model). ``--profile FILE`` writes a cProfile of one more fit by NEW.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CORPUS = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "datasets", "docs-dev"))

_FIT = r"""
import hashlib, json, sys, time
from sst_cleaner import SiteCleaner
try:
    from sst_cleaner.tools.bench._scoring import find_manifests, load_corpus
except ImportError:  # a checkout from before the benchmark became a package
    from sst_cleaner.tools.bench import find_manifests, load_corpus

pages = load_corpus(find_manifests(sys.argv[1])[0]).pages[: int(sys.argv[2])]
inputs = [(p.url, p.html) for p in pages]
if len(sys.argv) > 3:
    import cProfile
    cProfile.run("SiteCleaner(site_time_budget=None).fit(inputs)", sys.argv[3])
    sys.exit(0)
t = time.process_time()
cleaner = SiteCleaner(site_time_budget=None).fit(inputs)
spent = time.process_time() - t
print(spent, hashlib.sha256(json.dumps(cleaner.to_dict(), sort_keys=True).encode()).hexdigest())
"""


def fit(checkout: str, corpus: str, n_pages: int, profile: str = "") -> tuple[float, str]:
    """CPU seconds of one fit by ``checkout`` in a fresh process (no cache warm from an
    earlier fit), and the digest of its model's JSON."""
    env = dict(os.environ, PYTHONPATH=checkout, OMP_NUM_THREADS="1")
    argv = [sys.executable, "-c", _FIT, corpus, str(n_pages)] + ([profile] if profile else [])
    out = subprocess.run(argv, cwd=checkout, env=env, stdout=subprocess.PIPE, text=True, check=True).stdout
    if profile:
        return 0.0, ""
    seconds, digest = out.split()
    return float(seconds), digest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", help="checkout of the code before the change")
    ap.add_argument("new", help="checkout of the code after it")
    ap.add_argument("--corpus", default=DEFAULT_CORPUS, help="a corpus directory (with a manifest.jsonl)")
    ap.add_argument("--pages", type=int, default=500, help="the corpus's first pages, fitted as one site")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--profile", help="write a cProfile of one fit by NEW to this file")
    args = ap.parse_args(argv)
    checkouts = {"old": os.path.abspath(args.old), "new": os.path.abspath(args.new)}
    spent = {"old": 0.0, "new": 0.0}
    digests = set()
    for r in range(args.rounds):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        line = []
        for name in order:
            seconds, digest = fit(checkouts[name], args.corpus, args.pages)
            spent[name] += seconds
            digests.add(digest)
            line.append(f"{name} {seconds:.2f} s")
        print(f"round {r + 1}: " + ", ".join(line), flush=True)
    if args.profile:
        fit(checkouts["new"], args.corpus, args.pages, os.path.abspath(args.profile))
    same = len(digests) == 1
    print(f"{args.pages} pages as one site x {args.rounds}: new / old {spent['new'] / spent['old']:.3f}")
    print("models: " + ("the same JSON" if same else f"DIFFERENT ({len(digests)} digests)"))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
