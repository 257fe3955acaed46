"""Peak memory and speed of ``sst-cleaner site`` on a large generated WARC archive.

    python benchmarks/warc_memory.py [--records 100000] [--sites 20]

Writes a ``.warc.gz`` of ``--records`` HTML responses spread over ``--sites`` hosts (each
host a template of navigation and footer around a few paragraphs that vary by page) in
a temporary folder, runs the command line on it in a child process, and prints the
child's peak resident memory (``resource.getrusage(RUSAGE_CHILDREN)``) and pages a
second. The archive's pages are never held together by the run: this shows it.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
import time

from sst_cleaner.cli._warc import write_record

WORDS = "river town market bridge winter harvest council school train letter garden music".split()


def page(rng: random.Random, site: int, k: int) -> bytes:
    paras = "".join(f"<p>{' '.join(rng.choices(WORDS, k=rng.randint(15, 60)))}.</p>" for _ in range(rng.randint(2, 6)))
    nav = "".join(f'<li><a href="/s{site}/{j}">Section {j}</a></li>' for j in range(8))
    return (
        f"<html><head><title>Site {site} page {k}</title></head><body><header><ul>{nav}</ul></header>"
        f"<main><h1>Story {k}</h1>{paras}</main><footer>Copyright site {site} - contact - privacy</footer>"
        "</body></html>"
    ).encode()


def write_archive(path: str, records: int, sites: int) -> None:
    rng = random.Random(7)
    with open(path, "wb") as fh:
        for k in range(records):
            site = k % sites
            write_record(fh, f"http://site{site}.test/p/{k}", page(rng, site, k), compress=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--sites", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        archive = os.path.join(tmp, "crawl.warc.gz")
        write_archive(archive, args.records, args.sites)
        size = os.path.getsize(archive)
        start = time.perf_counter()
        code = "import sys; from sst_cleaner.cli import main; sys.exit(main(sys.argv[1:]))"
        with open(os.devnull, "w") as out:
            done = subprocess.run([sys.executable, "-c", code, "site", archive, "--format", "text"], stdout=out)
        seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
    print(f"records: {args.records} over {args.sites} sites, archive {size / 1e6:.1f} MB, exit {done.returncode}")
    print(f"peak RSS of the run: {peak_mb:.0f} MB; {args.records / seconds:.0f} pages/s ({seconds:.0f} s)")


if __name__ == "__main__":
    main()
