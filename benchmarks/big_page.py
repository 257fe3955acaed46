"""How long a long real-looking page takes: a generated reference page of about 40,000
elements (sections of headings, paragraphs with inline markup, code blocks, tables and
definition lists, in a documentation template), fitted with three shorter pages of its
site and cleaned, under the default limits; then the same page with lists and tables of
short lines, and the fuzzer's flood of one-character list items. Prints for each the
elements kept, the CPU seconds of parsing, of the clean (and its ratio to the reference
page's, measured in the same run) and of the page's learning, and the status.

    python benchmarks/big_page.py [--elements 40000]
"""

from __future__ import annotations

import argparse
import random
import time


def reference_page(n_elements: int, seed: int = 0, short_lines: bool = False) -> str:
    """``short_lines``: each section also lists its flags, one short line each, and a
    table of permission bits, one or two characters a cell (what a long page of
    constants or a format table looks like)."""
    rng = random.Random(seed)
    words = (
        "file path mode flag buffer stream handle process signal socket descriptor "
        "environment variable return value error raise argument default option"
    ).split()

    def sent(n=10):
        return " ".join(rng.choice(words) for _ in range(n)).capitalize() + "."

    nav = "".join(f'<li><a href="/lib/m{k}.html">module {k}</a></li>' for k in range(60))
    parts = []
    # 24 elements a section (54 with short lines), 127 around them (html, body, the
    # navigation, the footer)
    per_section = 54 if short_lines else 24
    for i in range(1, (n_elements - 127) // per_section + 1):
        if short_lines:
            flags = "".join(f"<li><code>os.F{i}_{k}</code></li>" for k in range(6))
            bits = "".join(f"<tr><td>{k}</td><td>{'rwx'[k % 3]}</td><td>{k * 8}</td></tr>" for k in range(4))
            parts.append(f"<ul>{flags}</ul><table>{bits}</table>")
        parts.append(
            f'<div class="section" id="f{i}"><h3>os.func_{i}(<em>path</em>, <em>mode</em>)'
            f'<a class="headerlink" href="#f{i}">¶</a></h3>'
            f"<dl><dt><code>path</code></dt><dd><p>{sent()} <code>x_{i}</code> {sent()}</p></dd></dl>"
            f'<p>{sent(14)} <a href="#f{i - 1}"><code>func_{i - 1}</code></a> {sent()}</p>'
            f'<pre><span class="k">import</span> os\nos.func_{i}(<span class="s">"a"</span>, 0o{i % 8}44)\n</pre>'
            f"<table><tr><th>flag</th><th>meaning</th></tr><tr><td>F_{i}</td><td>{sent(6)}</td></tr></table></div>"
        )
    return (
        f"<!DOCTYPE html><html><head><title>os - reference</title></head><body>"
        f'<div class="nav"><ul>{nav}</ul></div><div class="body" role="main"><h1>os</h1>'
        f'{"".join(parts)}</div><div class="footer">Copyright the authors.</div></body></html>'
    )


def flood_page(n_items: int = 200_000) -> str:
    """The fuzzer's flood of one-character list items (``<li>x``), which the limits cut."""
    return "<html><body><p>start</p>" + "<li>x" * n_items + "<p>end</p></body></html>"


def _measure(cleaner, html: str) -> dict:
    """Parse, clean and learn ``html`` once each, in CPU seconds, with what was kept."""
    from sst_cleaner.engine._dom import parse_html

    t = time.process_time()
    page = parse_html(html)
    parse_s = time.process_time() - t
    t = time.process_time()
    result = cleaner.clean(html)
    clean_s = time.process_time() - t
    t = time.process_time()
    cleaner.partial_fit(html)
    learn_s = time.process_time() - t
    n = sum(1 for _ in page.root.iter())
    return dict(
        parse=parse_s, clean=clean_s, learn=learn_s, elements=n, dropped=page.dropped_elements, status=result.status
    )


def main() -> None:
    from sst_cleaner import SiteCleaner
    from sst_cleaner.engine._limits import DEFAULT_LIMITS

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--elements", type=int, default=40_000)
    args = ap.parse_args()
    pages = {
        "reference": reference_page(args.elements),
        "reference, short lines": reference_page(args.elements, short_lines=True),
        "flood of <li>x": flood_page(),
    }
    others = [reference_page(400, seed=s) for s in (1, 2, 3)]
    print(
        f"limits: max_tags {DEFAULT_LIMITS.max_tags}, max_elements {DEFAULT_LIMITS.max_elements}, "
        f"max_tiny_blocks {DEFAULT_LIMITS.max_tiny_blocks}, page_time_budget {DEFAULT_LIMITS.page_time_budget}s"
    )
    base = None
    for name, html in pages.items():
        m = _measure(SiteCleaner().fit(others), html)
        base = base or m["clean"]
        print(
            f"{name}: {len(html):,} chars, {html.count('<'):,} tags, {m['elements']:,} elements kept "
            f"({m['dropped']:,} dropped); parse {m['parse']:.2f}s CPU, clean {m['clean']:.2f}s CPU "
            f"({m['clean'] / base:.2f} of the reference page's, status {m['status']}), "
            f"learn (partial_fit) {m['learn']:.2f}s CPU"
        )


if __name__ == "__main__":
    main()
