"""Generated documentation pages in the markup of real generators (Sphinx >= 2 with its
"view source" pages, MkDocs, Doxygen), for the format tests: each site shares its
generator's navigation, sidebar and footer, and every page has its own article."""

from __future__ import annotations

import random

from docsite import WORDS, sentence


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _pre(text: str) -> str:
    """Sphinx's inline literal: one ``span.pre`` per word."""
    spans = " ".join(f'<span class="pre">{w}</span>' for w in text.split())
    return f'<code class="docutils literal notranslate">{spans}</code>'


def sphinx_article(i: int) -> dict:
    rng = random.Random(1000 + i)
    return {
        "title": f"Module {i}: {_words(rng, 2)}",
        "intro": sentence(rng, 14),
        "literal": f"run_{i}(limit=3)",
        "items": [sentence(rng, 6) for _ in range(3)],
        "nested": [sentence(rng, 5) for _ in range(2)],
        "more": sentence(rng, 9),
        "steps": [sentence(rng, 5) for _ in range(2)],
        "term": f"option_{i}",
        "definition": sentence(rng, 10),
        "func": f"make_{i}",
        "func_doc": sentence(rng, 11),
        "outro": sentence(rng, 13),
    }


def _sphinx_frame(title: str, body: str) -> str:
    nav = "".join(f'<li class="right"><a href="m{k}.html">Module {k}</a> |</li>' for k in range(6))
    return f"""<!DOCTYPE html><html lang="en"><head><title>{title} &#8212; Lantern 2.1 documentation</title></head>
<body><div class="related" role="navigation" aria-label="related navigation"><h3>Navigation</h3><ul>
<li class="right"><a href="genindex.html" title="General Index">index</a></li>{nav}</ul></div>
<div class="document"><div class="documentwrapper"><div class="bodywrapper"><div class="body" role="main">
{body}
</div></div></div>
<div class="sphinxsidebar" role="navigation" aria-label="main navigation"><div class="sphinxsidebarwrapper">
<h3>Quick search</h3><p>Enter search terms or a module, class or function name.</p>
<h3>This Page</h3><ul class="this-page-menu"><li><a href="_sources/x.rst.txt">Show Source</a></li></ul>
</div></div></div>
<div class="footer" role="contentinfo">&#169; Copyright 2024, the Lantern team. Created using Sphinx 7.2.6.</div>
</body></html>"""


def sphinx_page(i: int) -> str:
    a = sphinx_article(i)
    items = "".join(f"<li><p>{x}</p></li>" for x in a["items"][:-1])
    nested = "".join(f"<li><p>{x}</p></li>" for x in a["nested"])
    items += f'<li><p>{a["items"][-1]}</p><ul class="simple">{nested}</ul><p>{a["more"]}</p></li>'
    steps = "".join(f"<li><p>{x}</p></li>" for x in a["steps"])
    body = f"""<section id="module-{i}"><h1>{a["title"]}<a class="headerlink" href="#module-{i}" title="Permalink to this heading">¶</a></h1>
<p>{a["intro"]} Call {_pre(a["literal"])} first.</p>
<ul>{items}</ul>
<ol class="arabic simple">{steps}</ol>
<dl class="simple"><dt>{a["term"]}</dt><dd><p>{a["definition"]}</p></dd></dl>
<dl class="py function"><dt class="sig sig-object py" id="lantern.{a["func"]}"><span class="sig-name descname"><span class="pre">{a["func"]}</span></span><span class="sig-paren">(</span><em class="sig-param"><span class="n"><span class="pre">size</span></span></em><span class="sig-paren">)</span><a class="headerlink" href="#lantern.{a["func"]}" title="Permalink to this definition">¶</a></dt>
<dd><p>{a["func_doc"]}</p></dd></dl>
<p>{a["outro"]}</p>
</section>"""
    return _sphinx_frame(a["title"], body)


def viewcode_source(i: int) -> str:
    """The module's code as Sphinx's viewcode shows it (without the ``[docs]`` links)."""
    return (
        f'"""Module {i} of the lantern package."""\n'
        "import os\n\n"
        f"def first_{i}(x):\n    return x + {i}\n\n"
        f"LIMIT_{i} = {i * 7}\n\n"
        f"class Keeper{i}:\n    def keep(self, y):\n        return y * {i}\n\n"
        f"DEFAULT_{i} = Keeper{i}()"
    )


def viewcode_page(i: int) -> str:
    """A Sphinx "view source" page: a ``pre`` whose documented functions and classes
    are each a ``div.viewcode-block`` inside it, between the module's other lines."""
    body = f"""<h1>Source code for lantern.mod{i}</h1><div class="highlight"><pre>
<span></span><span class="sd">&quot;&quot;&quot;Module {i} of the lantern package.&quot;&quot;&quot;</span>
<span class="kn">import</span> <span class="nn">os</span>

<div class="viewcode-block" id="first_{i}"><a class="viewcode-back" href="../../m{i}.html#first_{i}">[docs]</a><span class="k">def</span> <span class="nf">first_{i}</span><span class="p">(</span><span class="n">x</span><span class="p">):</span>
    <span class="k">return</span> <span class="n">x</span> <span class="o">+</span> <span class="mi">{i}</span></div>

<span class="n">LIMIT_{i}</span> <span class="o">=</span> <span class="mi">{i * 7}</span>

<div class="viewcode-block" id="Keeper{i}"><a class="viewcode-back" href="../../m{i}.html#Keeper{i}">[docs]</a><span class="k">class</span> <span class="nc">Keeper{i}</span><span class="p">:</span>
    <span class="k">def</span> <span class="nf">keep</span><span class="p">(</span><span class="bp">self</span><span class="p">,</span> <span class="n">y</span><span class="p">):</span>
        <span class="k">return</span> <span class="n">y</span> <span class="o">*</span> <span class="mi">{i}</span></div>

<span class="n">DEFAULT_{i}</span> <span class="o">=</span> <span class="n">Keeper{i}</span><span class="p">()</span>
</pre></div>"""
    return _sphinx_frame(f"lantern.mod{i}", body)


def sphinx_site(n: int = 8) -> list[tuple[str, str]]:
    """Guide pages and view-source pages of one Sphinx manual."""
    pages = [(f"http://lantern.test/m{i}.html", sphinx_page(i)) for i in range(n)]
    pages += [(f"http://lantern.test/_modules/lantern/mod{i}.html", viewcode_page(i)) for i in range(n)]
    return pages


def doxygen_article(i: int) -> dict:
    rng = random.Random(2000 + i)
    return {
        "title": f"beacon_{i}.c File Reference",
        "intro": sentence(rng, 14),
        "code": f"int main(void) {{\n    int n = 0;\n    ring_{i}(n);\n    return n;\n}}",
        "tooltip": f"Rings the beacon {i} once: {sentence(rng, 6)}",
        "outro": sentence(rng, 12),
    }


def doxygen_page(i: int) -> str:
    a = doxygen_article(i)
    lines = a["code"].split("\n")
    lines[2] = lines[2].replace(f"ring_{i}", f'<a class="code hl_function" href="beacon_{i}_8c.html#a{i}">ring_{i}</a>')
    fragment = "\n".join(f'<div class="line">{ln}</div>' for ln in lines)
    menu = "".join(f'<li><a href="files{k}.html">Files {k}</a></li>' for k in range(5))
    return f"""<!DOCTYPE html><html><head><title>Beacon: {a["title"]}</title></head><body>
<div id="top"><div id="titlearea"><table><tr><td id="projectalign"><div id="projectname">Beacon</div></td></tr></table></div>
<div id="main-nav"><ul class="sm sm-dox" id="main-menu"><li><a href="index.html">Main Page</a></li>{menu}</ul></div></div>
<div id="nav-path" class="navpath"><ul><li class="navelem"><a href="dir_src.html">src</a></li></ul></div>
<div class="header"><div class="headertitle"><div class="title">{a["title"]}</div></div></div>
<div class="contents">
<p>{a["intro"]}</p>
<div class="fragment">{fragment}
</div><!-- fragment -->
<div class="ttc" id="abeacon_{i}_8c_html_a{i}"><div class="ttname"><a href="beacon_{i}_8c.html#a{i}">ring_{i}</a></div><div class="ttdeci">void ring_{i}(int n)</div><div class="ttdoc">{a["tooltip"]}</div><div class="ttdef"><b>Definition:</b> <a href="beacon_{i}_8c_source.html#l00012">beacon_{i}.c:12</a></div></div>
<p>{a["outro"]}</p>
</div>
<hr class="footer"/><address class="footer"><small>Generated by&#160;<a href="https://www.doxygen.org/index.html">doxygen</a> 1.9.8</small></address>
</body></html>"""


def doxygen_site(n: int = 8) -> list[tuple[str, str]]:
    return [(f"http://beacon.test/beacon_{i}_8c.html", doxygen_page(i)) for i in range(n)]


def docbook_article(i: int) -> dict:
    rng = random.Random(3000 + i)
    return {
        "title": f"Chapter {i}. {_words(rng, 2).title()}",
        "intro": sentence(rng, 15),
        "items": [sentence(rng, 6) for _ in range(2)],
        "option": f"--level{i}",
        "option_doc": sentence(rng, 9),
        "head": (f"Disk {i}", f"Role of {_words(rng, 1)}"),
        "rows": [(f"disk{i}{k}", _words(rng, 3)) for k in range(2)],
        "outro": sentence(rng, 12),
    }


def docbook_page(i: int) -> str:
    """A chapter as DocBook's XSL writes it: items, terms and table cells as ``p``."""
    a = docbook_article(i)
    items = "".join(f'<li class="listitem"><p>{x}</p></li>' for x in a["items"])
    rows = "".join(f"<tr><td><p>{n}</p></td><td><p>{v}</p></td></tr>" for n, v in a["rows"])
    nav = f'<td><a accesskey="p" href="ch{i - 1}.html">Prev</a></td><td><a accesskey="n" href="ch{i + 1}.html">Next</a></td>'
    return f"""<html><head><title>{a["title"]}</title></head><body>
<div class="navheader"><table width="100%"><tr><th colspan="2">The Storage Handbook</th></tr><tr>{nav}</tr></table><hr></div>
<div class="chapter"><div class="titlepage"><div><div><h1 class="title"><a name="ch{i}"></a>{a["title"]}</h1></div></div></div>
<p>{a["intro"]}</p>
<div class="itemizedlist"><ul class="itemizedlist" style="list-style-type: disc; ">{items}</ul></div>
<div class="variablelist"><dl class="variablelist"><dt><span class="term"><code class="option">{a["option"]}</code></span></dt><dd><p>{a["option_doc"]}</p></dd></dl></div>
<div class="informaltable"><table class="informaltable" border="1"><thead><tr><th><p>{a["head"][0]}</p></th><th><p>{a["head"][1]}</p></th></tr></thead><tbody>{rows}</tbody></table></div>
<p>{a["outro"]}</p>
</div>
<div class="navfooter"><hr><table width="100%"><tr>{nav}<td><a href="index.html">Home</a></td></tr></table></div></body></html>"""


def docbook_site(n: int = 8) -> list[tuple[str, str]]:
    return [(f"http://handbook.test/ch{i}.html", docbook_page(i)) for i in range(1, n + 1)]
