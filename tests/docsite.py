"""A small generated documentation site for the format and metadata tests: every page
shares a navigation, a sidebar and a footer, and has its own article with a heading
(with a Sphinx-style permalink), paragraphs, a code block, lists and a table."""

from __future__ import annotations

import random

WORDS = (
    "river stone maple garden lantern harbor copper meadow violet thunder orchard "
    "falcon prism quartz ember willow canyon cobalt saffron glacier beacon tundra "
    "juniper marble nectar oasis pebble quill raven summit timber velvet walnut"
).split()


def sentence(rng: random.Random, n: int = 12) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def article(i: int) -> dict:
    rng = random.Random(i)
    title = f"Guide {i}: {rng.choice(WORDS)} {rng.choice(WORDS)}"
    paras = [" ".join(sentence(rng) for _ in range(3)) for _ in range(3)]
    code = f"def handler_{i}(request):\n    if request.ok:\n        return {i}\n\n    return None"
    return {
        "title": title,
        "paras": paras,
        "code": code,
        "items": [sentence(rng, 5) for _ in range(3)],
        "steps": [sentence(rng, 4) for _ in range(2)],
        "rows": [(rng.choice(WORDS), str(rng.randint(10, 99))) for _ in range(3)],
    }


def page(i: int, head: str = "") -> str:
    a = article(i)
    nav = "".join(f'<li><a href="/p{k}.html">Section {k} overview</a></li>' for k in range(8))
    items = "".join(f"<li>{x}</li>" for x in a["items"])
    steps = "".join(f"<li>{x}</li>" for x in a["steps"])
    rows = "".join(f"<tr><td>{n}</td><td>{v}</td></tr>" for n, v in a["rows"])
    paras = "".join(f"<p>{p}</p>" for p in a["paras"])
    return f"""<!DOCTYPE html><html lang="en"><head><title>{a["title"]} - Docs</title>{head}</head><body>
<div class="nav"><ul>{nav}</ul></div>
<div class="sidebar"><p>Search the documentation. Report a bug. Edit this page on the forge.</p></div>
<div class="body" role="main"><div class="section" id="s{i}">
<h1>{a["title"]}<a class="headerlink" href="#s{i}" title="Permalink to this headline">¶</a></h1>
{paras}
<h2 id="code{i}">Example <a href="#code{i}">§</a></h2>
<div class="highlight"><pre><span class="k">def</span> {a["code"][4:]}</pre></div>
<ul>{items}</ul>
<ol>{steps}</ol>
<table><tr><th>Name</th><th>Value</th></tr>{rows}</table>
</div></div>
<div class="footer"><p>Copyright 2024 the documentation team. Built with a generator. Privacy policy.</p></div>
</body></html>"""


def site(n: int = 8) -> list[tuple[str, str]]:
    return [(f"http://docs.test/p{i}.html", page(i)) for i in range(n)]
