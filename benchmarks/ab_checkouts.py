"""Compare the cleaning time of two checkouts of the project on the same pages, in step.

    python benchmarks/ab_checkouts.py OLD_CHECKOUT NEW_CHECKOUT [--corpus DIR] [--mode page|site|unseen]
                                      [--passes 3] [--chunk 10]

Each checkout runs in a worker process of its own that loads the corpus once (and, in
site mode, fits every site on all its pages, as the benchmark's transductive mode does;
in unseen mode, on every other page of the site, and only the pages it did not learn are
cleaned: a clean of a page the model learnt reuses the analysis made while learning it,
so site mode leaves the page's walk, blocks and sentences out of the timing).
The two then clean the same chunk of pages one after the other, the order swapped at
every chunk, until every page has been cleaned ``--passes`` times. The machine's speed
drifts by half within minutes, which makes two benchmark runs made one after the other
hard to compare; in step, a drift hits both checkouts alike, so the ratio of their CPU
times measures the code. Prints the ratio NEW / OLD of every pass and of all of them.

Outputs are not compared here: ``same_output.py`` does that.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CORPUS = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "datasets", "sites-dev"))

_WORKER = r"""
import collections, sys, time
from sst_cleaner import SiteCleaner
try:
    from sst_cleaner.tools.bench._scoring import find_manifests, load_corpus
except ImportError:  # a checkout from before the benchmark became a package
    from sst_cleaner.tools.bench import find_manifests, load_corpus

pages = load_corpus(find_manifests(sys.argv[1])[0]).pages
by_site = collections.defaultdict(list)
for p in pages:
    by_site[p.site_key].append(p)
cleaners = {}
for site, site_pages in by_site.items():
    cleaners[site] = SiteCleaner()
    if sys.argv[2] == "site":
        cleaners[site].fit([p.html for p in site_pages])
    elif sys.argv[2] == "unseen":
        cleaners[site].fit([(p.url, p.html) for p in site_pages[::2]])
if sys.argv[2] == "unseen":
    pages = [p for site_pages in by_site.values() for p in site_pages[1::2]]
print(len(pages), flush=True)
for line in sys.stdin:
    start, end = map(int, line.split())
    t = time.process_time()
    for p in pages[start:end]:
        cleaners[p.site_key].clean(p.html, url=p.url)
    print(time.process_time() - t, flush=True)
"""


class Worker:
    """One checkout's worker process: ``clean(start, end)`` returns its CPU seconds."""

    def __init__(self, checkout: str, corpus: str, mode: str):
        env = dict(os.environ, PYTHONPATH=checkout, OMP_NUM_THREADS="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _WORKER, corpus, mode],
            cwd=checkout,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.n_pages = int(self._read())

    def _read(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("a worker stopped (see its error output above)")
        return line

    def clean(self, start: int, end: int) -> float:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{start} {end}\n")
        self.proc.stdin.flush()
        return float(self._read())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def in_step(old: Worker, new: Worker, passes: int, chunk: int) -> list[tuple[float, float]]:
    """(old CPU seconds, new CPU seconds) of each pass over the pages."""
    n = old.n_pages
    if new.n_pages != n:
        raise RuntimeError("the two checkouts read different pages")
    out = []
    turn = 0
    for _ in range(passes):
        spent = {id(old): 0.0, id(new): 0.0}
        for start in range(0, n, chunk):
            pair = (old, new) if turn % 2 == 0 else (new, old)
            turn += 1
            for worker in pair:
                spent[id(worker)] += worker.clean(start, min(n, start + chunk))
        out.append((spent[id(old)], spent[id(new)]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", help="checkout of the code before the change")
    ap.add_argument("new", help="checkout of the code after it")
    ap.add_argument("--corpus", default=DEFAULT_CORPUS, help="a corpus directory (with a manifest.jsonl)")
    ap.add_argument(
        "--mode",
        choices=("page", "site", "unseen"),
        default="page",
        help="site: each site fitted first (unseen: on half its pages)",
    )
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=10, help="pages cleaned by one checkout before the other's turn")
    args = ap.parse_args(argv)
    old = Worker(os.path.abspath(args.old), args.corpus, args.mode)
    new = Worker(os.path.abspath(args.new), args.corpus, args.mode)
    try:
        passes = in_step(old, new, args.passes, args.chunk)
    finally:
        old.close()
        new.close()
    for i, (a, b) in enumerate(passes, 1):
        print(f"pass {i}: old {a:.2f} s, new {b:.2f} s, new / old {b / a:.3f}")
    total_old, total_new = sum(a for a, _ in passes), sum(b for _, b in passes)
    print(f"{args.mode} mode, {old.n_pages} pages x {args.passes}: new / old {total_new / total_old:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
