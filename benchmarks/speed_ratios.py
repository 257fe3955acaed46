"""How many times lxml's parse of a page a clean costs, side by side, page by page.

    python benchmarks/speed_ratios.py [CORPUS_DIR] [--contenders site,page,resiliparse,trafilatura]

For each contender a fresh worker process loads the corpus and, page by page, times
lxml's ``document_fromstring`` of the page and the contender on the same page (the order
swapped at every page), in process CPU time. It prints, per contender, the sum of its
times over the pages divided by the sum of lxml's times in the same process: the ratio is
measured in step, so the machine's drift hits both sides alike.

Contenders: ``site`` cleans with the site's model, fitted on all of the site's pages in
another process and loaded from its saved file (a process that fitted on the pages would
clean them with warm caches, which no crawl has for a page it has not seen); ``page``
cleans every page without a model (the page-level path); ``resiliparse`` is
``extract_plain_text(html, main_content=True)``; ``trafilatura`` is
``trafilatura.extract(html)``. Those two are skipped when not installed. lxml parses the
page's UTF-8 bytes (it refuses a str with an XML declaration).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CORPUS = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "datasets", "sites-dev"))

_WORKER = r"""
import json, sys, time
from lxml import html as lxml_html
from sst_cleaner import SiteCleaner
from sst_cleaner.tools.bench._scoring import find_manifests, load_corpus

corpus, contender, models = sys.argv[1], sys.argv[2], sys.argv[3]
pages = [p for site in load_corpus(find_manifests(corpus)[0]).sites.values() for p in site]
if contender == "site":
    index = json.load(open(models))
    cleaners = {site: SiteCleaner.load(path) for site, path in index.items()}
    run = lambda p: cleaners[p.site_key].clean(p.html, url=p.url)
elif contender == "page":
    cleaner = SiteCleaner()
    run = lambda p: cleaner.clean(p.html, url=p.url)
elif contender == "resiliparse":
    from resiliparse.extract.html2text import extract_plain_text
    run = lambda p: extract_plain_text(p.html, main_content=True)
elif contender == "trafilatura":
    import trafilatura
    run = lambda p: trafilatura.extract(p.html)
# lxml refuses a str with an XML declaration (many documentation pages have one): it is
# given the page's UTF-8 bytes, as the cleaner gives libxml2
raw = {id(p): p.html.encode("utf-8") for p in pages}
parse = lambda p: lxml_html.document_fromstring(raw[id(p)])
clock = time.process_time
ours = base = 0.0
for i, p in enumerate(pages):
    for step in ((parse, run) if i % 2 else (run, parse)):
        t = clock()
        step(p)
        dt = clock() - t
        if step is parse:
            base += dt
        else:
            ours += dt
print(json.dumps({"pages": len(pages), "contender": ours, "lxml": base}))
"""


def _fit_site(args: tuple[list, str]) -> None:
    from sst_cleaner import SiteCleaner

    htmls, path = args
    cleaner = SiteCleaner()
    cleaner.fit(htmls)
    cleaner.save(path)


def fit_models(corpus: str, folder: str, jobs: int) -> str:
    """Every site of ``corpus`` fitted on all its pages and saved; returns the index file."""
    from sst_cleaner.tools.bench._scoring import find_manifests, load_corpus

    sites = load_corpus(find_manifests(corpus)[0]).sites
    index, work = {}, []
    for n, (site, pages) in enumerate(sites.items()):
        index[site] = os.path.join(folder, f"site{n}.json")
        work.append(([(p.url, p.html) for p in pages], index[site]))
    with ProcessPoolExecutor(jobs) as pool:
        list(pool.map(_fit_site, work))
    path = os.path.join(folder, "index.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(index, fh)
    return path


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", nargs="?", default=DEFAULT_CORPUS)
    ap.add_argument("--contenders", default="site,page,resiliparse")
    ap.add_argument("--jobs", type=int, default=2, help="processes fitting the site models")
    args = ap.parse_args(argv)
    contenders = [c for c in args.contenders.split(",") if c]
    optional = {"resiliparse": "resiliparse", "trafilatura": "trafilatura"}
    with tempfile.TemporaryDirectory() as folder:
        index = fit_models(args.corpus, folder, args.jobs) if "site" in contenders else ""
        env = dict(os.environ, OMP_NUM_THREADS="1")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.dirname(HERE), env.get("PYTHONPATH", "")]))
        for name in contenders:
            if name in optional and not _installed(optional[name]):
                print(f"{name:12s} not installed, skipped")
                continue
            out = subprocess.run(
                [sys.executable, "-c", _WORKER, args.corpus, name, index],
                env=env,
                capture_output=True,
                text=True,
            )
            if out.returncode:
                print(f"{name:12s} failed:\n{out.stderr}", file=sys.stderr)
                return 1
            got = json.loads(out.stdout.strip().splitlines()[-1])
            print(
                f"{name:12s} {got['contender'] / got['lxml']:5.2f}x lxml's parse "
                f"({got['contender'] * 1000 / got['pages']:.2f} ms a page against "
                f"{got['lxml'] * 1000 / got['pages']:.2f} ms, {got['pages']} pages)",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
