"""The README's demo command, run as a user runs it: ``scrapy crawl demo -O cleaned.jsonl``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from sst_cleaner import available_methods
from sst_cleaner.engine._text import split_sentences
from sst_cleaner.tools.demo import DemoSite
from sst_cleaner.tools.demo import words as W

ROOT = Path(__file__).resolve().parent.parent

# site furniture of the demo: none of it may reach a cleaned item
BOILERPLATE = [
    "Accept all cookies",
    "We use cookies",
    "All rights reserved",
    "Advertisement",
    "Most read",
    "Related articles",
    "Subscribe to the Morning Ledger newsletter",
    "Share this story",
    "Learn more",
    "Search the Ledger",
    "Terms of use",
    "Advertise with us",
    "Annual report (PDF)",
] + W.ADS


@pytest.mark.skipif(
    "default" not in available_methods(), reason="the default method (sst_cleaner/hybrid.py) is not registered yet"
)
def test_demo_crawl_feed_is_clean(tmp_path):
    out = tmp_path / "cleaned.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "demo", "-O", str(out)],
        cwd=str(ROOT),
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line.strip()]
    site = DemoSite()  # the spider's defaults: seed 7, 60 articles
    assert len(rows) == 60
    for row in rows:
        text = row["text"]
        for phrase in BOILERPLATE:
            assert phrase not in text, (row["url"], phrase)
        nav_lines = {label for _, label in W.SECTIONS} | {"Home", W.SITE_NAME}
        assert not nav_lines & {line.strip() for line in text.splitlines()}, row["url"]
        gold = site.gold(urlsplit(row["url"]).path)
        body = gold.splitlines()[1:]  # the article's paragraphs (line 0 is its title)
        sentences = [s for line in body for s in split_sentences(line) if len(s) > 20]
        flat = " ".join(text.split())
        found = sum(1 for s in sentences if " ".join(s.split()) in flat)
        assert found >= 0.9 * len(sentences), (row["url"], found, len(sentences))
    match = re.search(r"demo: 60 article pages, mean F1 ([0-9.]+), boilerplate removed ([0-9.]+)%", proc.stderr)
    assert match, proc.stderr[-2000:]
    assert float(match.group(1)) >= 0.9


@pytest.mark.parametrize("seed", range(6))
def test_any_crawl_order_sample_keeps_the_furniture_out(seed):
    """The demo crawl's sample depends on the order responses arrive in (a loaded machine
    reorders them): for samples a breadth-first crawl could gather, no article of the site
    may keep any of its furniture."""
    import random
    from collections import deque

    from sst_cleaner import SiteCleaner

    site, base = DemoSite(), "http://127.0.0.1:8000"
    rng = random.Random(seed)
    seen, queue, order = {"/"}, deque(["/"]), []
    while queue and len(order) < 20:
        i = rng.randrange(min(len(queue), 16))
        path = queue[i]
        del queue[i]
        html = site.page(path)
        if html is None:
            continue
        order.append(path)
        for href in re.findall(r'href="(/[^"]*)"', html):
            if href not in seen:
                seen.add(href)
                queue.append(href)
    cleaner = SiteCleaner().fit([(base + p, site.page(p)) for p in order])
    for path in site.article_paths:
        text = cleaner.clean(site.page(path), url=base + path).text
        assert not [b for b in BOILERPLATE if b in text], (path, text[-300:])
