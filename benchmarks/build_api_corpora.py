#!/usr/bin/env python3
"""Build api-dev: API-reference documentation sites with a tool-made gold.

    python3 benchmarks/build_api_corpora.py [OUT]        # default /work/data/api-dev
    python3 benchmarks/build_api_corpora.py OUT --work DIR --keep
    python3 benchmarks/build_api_corpora.py /work/data/api-sphinx --generators sphinx
    python3 benchmarks/build_api_corpora.py --split-by-generator /work/data/api-dev

The default build is api-dev (the gi-docgen, rustdoc and javadoc sites); the
Sphinx sites (generator "sphinx", alias "sphinx-autodoc") are built with
--generators sphinx.  --split-by-generator SRC builds nothing: it copies the sites
of the built corpus SRC into one corpus per generator, PREFIX-<generator> (PREFIX
= OUT, default SRC's folder/api: api-gidocgen, api-rustdoc, api-javadoc), each
with its own manifest.jsonl, stats.json and README.md; SRC is only read.

Standard library + lxml.  Needs apt-get (Debian 12 "bookworm" package lists),
dpkg-deb, and cargo/rustdoc for the two rustdoc sites.  Nothing is installed: every
package is fetched with `apt-get download` and unpacked with `dpkg-deb -x` into a
temporary work folder.  The rustdoc trees are built there from the crates' sources
in Debian's librust-*-dev packages with `cargo doc --offline --no-deps` (the
crates' optional and dev dependencies are removed from the copied Cargo.toml, so
nothing is fetched).

Layout and rules are those of docs-dev (shared/datasets/README.md, "docs-dev"):

    OUT/manifest.jsonl                 all pages, html/gold relative to OUT/
    OUT/<site>/manifest.jsonl          one site, html/gold relative to OUT/<site>/
    OUT/<site>/pages/<id>.html|.txt    page bytes as shipped/built; gold text
    OUT/stats.json                     per-site counts (candidates, skip reasons, ...)
    OUT/README.md                      what the corpus is

Selection: regular .html files under the site's HTML root(s) (no symlinks), minus the
site's skip list (index-like and generated listing pages; for the Sphinx sites
also the tables of contents, found by markup), files over 150 KB,
meta-refresh redirects, pages with < 2048 characters of visible text and golds
< 300 characters; more than 150 eligible: random.Random(0).sample(eligible, 150)
(eligible in pkg_path order); ids <site>-NNNN in pkg_path order.

Gold: the visible text of the first element matching the site's container, minus
the site's excluded elements and script/style/noscript/template, one line per block
element (each line of a <pre> a line, <br> a line break), whitespace collapsed.
The page text (page_chars/page_tokens) is the same function on the whole <body>
without the site's exclusions.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import lxml.html
import tomllib
from lxml import etree

MAX_BYTES = 150 * 1024
MIN_PAGE_CHARS = 2048
MIN_GOLD_CHARS = 300
SAMPLE = 150

# ---------------------------------------------------------------- sites


def _cls(el, name):
    return name in (el.get("class") or "").split()


def _is(tag, cls=None, **attrs):
    def pred(el):
        if el.tag != tag:
            return False
        if cls is not None and not _cls(el, cls):
            return False
        return all(el.get(k.rstrip("_")) == v for k, v in attrs.items())

    return pred


def _any(*preds):
    return lambda el: any(p(el) for p in preds)


GIDOCGEN_CONTAINER = _is("section", id="main")
GIDOCGEN_EXCLUDE = _any(_is("a", "anchor"), _is("a", "srclink"))
GIDOCGEN_RULE = '`section#main` − `a.anchor` (empty permalink), `a.srclink` ("[src]" source links)'

RUSTDOC_CONTAINER = _is("section", id="main-content")
RUSTDOC_EXCLUDE = _any(
    _is("div", "rustdoc-breadcrumbs"),
    _is("a", "anchor"),
    _is("a", "src"),
    lambda el: el.tag == "button",
    lambda el: el.tag == "rustdoc-toolbar",
    _is("summary", "hideme"),
)
RUSTDOC_RULE = (
    "`section#main-content` − `div.rustdoc-breadcrumbs`, `a.anchor` (§ "
    'permalinks), `a.src` ("Source" links), `button` ("Copy item path"), '
    '`rustdoc-toolbar`, `summary.hideme` ("Expand description")'
)

JAVADOC_CONTAINER = _is("main", role="main")
JAVADOC_EXCLUDE = _any(_is("div", "sub-title"), lambda el: el.tag == "button")
JAVADOC_RULE = (
    '`main[role=main]` − `div.sub-title` (the "Package x.y" breadcrumb line), '
    '`button` (summary-table tabs "All Methods / Static Methods / ...")'
)


SPHINX_EXCLUDE = _any(_is("a", "headerlink"), _is("span", "viewcode-link"))
SPHINX_EXCLUDED = (
    "`a.headerlink` (¶ permalinks of headings, definitions and, with "
    'sphinx-paramlinks, parameters), `span.viewcode-link` ("[source]" links of '
    "sphinx.ext.viewcode or, on the cryptography pages, linkcode's links to GitHub)"
)
SPHINX_RTD_CONTAINER = _is("div", itemprop="articleBody")
SPHINX_RTD_RULE = "`div[itemprop=articleBody]` − " + SPHINX_EXCLUDED
SPHINX_BASIC_CONTAINER = _is("div", "body", role="main")
SPHINX_BASIC_RULE = "`div.body[role=main]` − " + SPHINX_EXCLUDED
SPHINX_ZZZEEK_CONTAINER = _is("div", id="docs-body")
SPHINX_ZZZEEK_RULE = "`div#docs-body` − " + SPHINX_EXCLUDED

# the root pages that index the site or stand apart from its documentation
SPHINX_ROOT_SKIP = {
    "index.html",
    "contents.html",
    "genindex.html",
    "py-modindex.html",
    "search.html",
    "404.html",
    "changes.html",
    "license.html",
    "copyright.html",
}
SPHINX_SKIP_DOC = (
    "pages with more than half of the container's text in `div.toctree-wrapper` "
    "(a section's table of contents: skipped as `toc-page`); root "
    "`index.html`/`contents.html` (tables of contents), `genindex.html`, "
    "`py-modindex.html`, `search.html`, `404.html`, `changes.html` (changelog), "
    "`license.html`, `copyright.html`; `_modules/`, `_sources/`, `_static/`, "
    "`_images/`"
)


def sphinx_toc_page(cont, gold):
    """More than half of the container's text in toctrees: a section's table of contents."""
    toc = 0
    for el in cont.iter(tag=etree.Element):
        if _cls(el, "toctree-wrapper") and not any(_cls(a, "toctree-wrapper") for a in el.iterancestors()):
            toc += len(visible_text(el, SPHINX_EXCLUDE))
    return toc > len(gold) / 2


def sphinx_skip(*dirs):
    """Skip the index-like and non-documentation pages, and the top folders dirs."""
    skip_dirs = {"_modules", "_sources", "_static", "_images", *dirs}

    def skip(rel):
        parts = rel.split("/")
        if parts[0] in skip_dirs:
            return True
        return len(parts) == 1 and parts[0] in SPHINX_ROOT_SKIP

    return skip


def gidocgen_skip(rel):
    name = rel.rsplit("/", 1)[-1]
    return name in ("index.html", "classes_hierarchy.html", "visual-index.html")


def rustdoc_skip(rel):
    parts = rel.split("/")
    if parts[0] == "src" or len(parts) == 1:  # source view; help, settings
        return True
    if parts[-1] == "all.html":  # "List of all items"
        return True
    if parts[-1] == "index.html" and len(parts) > 2:  # module item listings
        return True
    return False


def javadoc_skip(rel):
    parts = rel.split("/")
    if len(parts) == 1 or parts[0] in ("src-html", "legal"):
        return True
    if "class-use" in parts or "doc-files" in parts:
        return True
    return parts[-1].startswith("package-")


SITES = [
    {
        "site": "adwaita",
        "package": "libadwaita-1-doc",
        "generator": "gi-docgen",
        "roots": ["usr/share/doc/libadwaita-1"],
        "url": lambda rel: "https://gnome.pages.gitlab.gnome.org/libadwaita/doc/1.2/" + rel,
        "template": (
            "{gen}: left sidebar (logo, search box, namespace and "
            "version, links to the type's members), in-page TOC column, empty "
            "footer"
        ),
        "skip": gidocgen_skip,
        "skip_doc": "namespace index, class hierarchy, visual index (widget gallery)",
        "container": GIDOCGEN_CONTAINER,
        "exclude": GIDOCGEN_EXCLUDE,
        "rule": GIDOCGEN_RULE,
        "licence": "LGPL-2.1+",
    },
    {
        "site": "pango",
        "package": "libpango1.0-doc",
        "generator": "gi-docgen",
        "roots": ["usr/share/doc/libpango1.0-doc/reference"],
        "url": lambda rel: "https://docs.gtk.org/" + rel,
        "template": (
            "{gen}: left sidebar (logo, search box, namespace and "
            "version, links to the type's members), in-page TOC column; six "
            "namespaces (Pango, PangoCairo, PangoFc, PangoFT2, PangoOT, "
            "PangoXft) with one template"
        ),
        "skip": gidocgen_skip,
        "skip_doc": "namespace indexes, class hierarchies",
        "container": GIDOCGEN_CONTAINER,
        "exclude": GIDOCGEN_EXCLUDE,
        "rule": GIDOCGEN_RULE,
        "licence": "LGPL-2+",
    },
    {
        "site": "gtksourceview",
        "package": "libgtksourceview-5-doc",
        "generator": "gi-docgen",
        "roots": ["usr/share/doc/gtksourceview5"],
        "url": lambda rel: "https://gnome.pages.gitlab.gnome.org/gtksourceview/gtksourceview5/" + rel,
        "template": (
            "{gen}: left sidebar (logo, search box, namespace and "
            "version, links to the type's members), in-page TOC column"
        ),
        "skip": gidocgen_skip,
        "skip_doc": "namespace index, class hierarchy",
        "container": GIDOCGEN_CONTAINER,
        "exclude": GIDOCGEN_EXCLUDE,
        "rule": GIDOCGEN_RULE,
        "licence": "LGPL-2.1+",
    },
    {
        "site": "rust-collections",
        "generator": "rustdoc",
        "crates": [
            ("librust-hashbrown-dev", "hashbrown", ["raw"]),
            ("librust-smallvec-dev", "smallvec", ["const_generics", "union", "write"]),
            ("librust-arrayvec-dev", "arrayvec", []),
            ("librust-tinyvec-dev", "tinyvec", []),
        ],
        "template": None,  # filled in with the rustdoc version
        "skip": rustdoc_skip,
        "skip_doc": "`src/` source views, `all.html` item lists, sub-module index pages "
        "(item listings), `help.html`, `settings.html`",
        "container": RUSTDOC_CONTAINER,
        "exclude": RUSTDOC_EXCLUDE,
        "rule": RUSTDOC_RULE,
        "licence": "MIT or Apache-2.0",
    },
    {
        "site": "rust-regex-syntax",
        "generator": "rustdoc",
        "crates": [("librust-regex-syntax-dev", "regex-syntax", []), ("librust-memchr-dev", "memchr", [])],
        "template": None,
        "skip": rustdoc_skip,
        "skip_doc": "`src/` source views, `all.html` item lists, sub-module index pages "
        "(item listings), `help.html`, `settings.html`",
        "container": RUSTDOC_CONTAINER,
        "exclude": RUSTDOC_EXCLUDE,
        "rule": RUSTDOC_RULE,
        "licence": "MIT or Apache-2.0 (regex-syntax), MIT or Unlicense (memchr)",
    },
    {
        "site": "commons-lang3",
        "package": "libcommons-lang3-java-doc",
        "generator": "javadoc",
        "roots": ["usr/share/doc/libcommons-lang3-java/api"],
        "url": lambda rel: "https://commons.apache.org/proper/commons-lang/apidocs/" + rel,
        "template": None,  # filled in with the javadoc version
        "skip": javadoc_skip,
        "skip_doc": "everything but class pages: overview, index, tree, deprecated, "
        "constant-values, serialized-form and help pages, package summaries/"
        "trees/uses, `class-use/` pages, `src-html/` source views",
        "container": JAVADOC_CONTAINER,
        "exclude": JAVADOC_EXCLUDE,
        "rule": JAVADOC_RULE,
        "licence": "Apache-2.0",
    },
    {
        "site": "jsoup",
        "package": "libjsoup-java-doc",
        "generator": "javadoc",
        "roots": ["usr/share/doc/libjsoup-java/api"],
        "url": lambda rel: "https://jsoup.org/apidocs/" + rel,
        "template": (
            "javadoc of OpenJDK 11 (the JDK 11 doclet's markup: camel-case classes, "
            "`ul.blockList` member lists, `table.memberSummary`): top navbar, sub-nav with "
            "summary/detail jump links and search box"
        ),
        "skip": javadoc_skip,
        "skip_doc": "everything but class pages, as commons-lang3",
        "container": JAVADOC_CONTAINER,
        "exclude": _any(_is("div", "subTitle"), JAVADOC_EXCLUDE),
        "rule": '`main[role=main]` − `div.subTitle` (the "Package x.y" line), `button`',
        "licence": "MIT",
    },
    {
        "site": "cryptography",
        "package": "python-cryptography-doc",
        "generator": "sphinx",
        "roots": ["usr/share/doc/python-cryptography-doc/html"],
        "url": lambda rel: "https://cryptography.io/en/38.0.4/" + rel,
        "template": (
            "{gen} with sphinx_rtd_theme: left sidebar (project name, version, "
            "search box, the site's whole navigation tree), breadcrumbs with "
            '"View page source", footer with Previous/Next buttons and copyright'
        ),
        "skip": sphinx_skip("development"),
        "skip_doc": SPHINX_SKIP_DOC + "; `development/` (contributors' guide and test-vector notes)",
        "container": SPHINX_RTD_CONTAINER,
        "exclude": SPHINX_EXCLUDE,
        "toc_page": sphinx_toc_page,
        "rule": SPHINX_RTD_RULE,
        "licence": "Apache-2.0 or BSD-3-Clause",
    },
    {
        "site": "werkzeug",
        "package": "python-werkzeug-doc",
        "generator": "sphinx",
        "roots": ["usr/share/doc/python-werkzeug-doc/html"],
        "url": lambda rel: "https://werkzeug.palletsprojects.com/en/2.2.x/" + rel,
        "template": (
            "{gen} with the Pallets theme (pallets-sphinx-themes, on Sphinx's basic "
            "layout): top related bar (index/modules/next/previous, breadcrumb), right "
            "sidebar (logo, the page's local TOC, previous/next chapter, quick search), "
            "copyright footer"
        ),
        "skip": sphinx_skip("deployment"),
        "skip_doc": SPHINX_SKIP_DOC + "; `deployment/` (server set-up guides)",
        "container": SPHINX_BASIC_CONTAINER,
        "exclude": SPHINX_EXCLUDE,
        "toc_page": sphinx_toc_page,
        "rule": SPHINX_BASIC_RULE,
        "licence": "BSD-3-Clause",
    },
    {
        "site": "sqlalchemy",
        "package": "python-sqlalchemy-doc",
        "generator": "sphinx",
        "roots": ["usr/share/doc/python-sqlalchemy-doc/html"],
        "url": lambda rel: "https://docs.sqlalchemy.org/en/14/" + rel,
        "template": (
            "{gen} with zzzeeksphinx (SQLAlchemy's theme): version header, top "
            "navigation (breadcrumb, previous/next), left sidebar (search box, the "
            "section's TOC with the page's own headings), bottom previous/next links, "
            "copyright"
        ),
        "skip": sphinx_skip("changelog", "tutorial", "faq"),
        "skip_doc": SPHINX_SKIP_DOC + "; `changelog/` (release and migration notes), "
        "`tutorial/` (the unified tutorial), `faq/`",
        "container": SPHINX_ZZZEEK_CONTAINER,
        "exclude": SPHINX_EXCLUDE,
        "toc_page": sphinx_toc_page,
        "rule": SPHINX_ZZZEEK_RULE,
        "licence": "MIT",
    },
]

FORBIDDEN = {
    "python3.11-doc",
    "python-django-doc",
    "python-scipy-doc",
    "buildbot-doc",
    "postgresql-doc-15",
    "rust-doc",
    "libgtk-4-doc",
    "mkdocs-doc",
    "libeigen3-doc",
    "libglib2.0-doc",
    "git-doc",
    "debian-handbook",
}

# ---------------------------------------------------------------- text

SKIP_TAGS = {"script", "style", "noscript", "template", "head", "title"}
BLOCK_TAGS = {
    "address",
    "article",
    "aside",
    "blockquote",
    "body",
    "caption",
    "center",
    "dd",
    "details",
    "dialog",
    "dir",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hgroup",
    "hr",
    "html",
    "legend",
    "li",
    "main",
    "menu",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "ul",
    "option",
    "picture",
    "noframes",
    "frameset",
    "search",
}
WS = re.compile(r"[ \t\n\r\f\v\u00a0\u200b]+")


class _Lines:
    def __init__(self):
        self.lines = []
        self.cur = []

    def text(self, s):
        self.cur.append(s)

    def brk(self):
        line = WS.sub(" ", "".join(self.cur)).strip()
        if line:
            self.lines.append(line)
        self.cur = []

    def pre(self, s):
        self.brk()
        for raw in s.split("\n"):
            line = WS.sub(" ", raw).strip()
            if line:
                self.lines.append(line)


def _walk(el, out, exclude):
    tag = el.tag if isinstance(el.tag, str) else None
    if tag is None:  # comment, processing instruction
        if el.tail:
            out.text(el.tail)
        return
    tag = tag.lower()
    if tag in SKIP_TAGS or (exclude is not None and exclude(el)):
        if el.tail:
            out.text(el.tail)
        return
    if tag == "pre":
        out.pre(_raw_text(el, exclude))
    elif tag == "br":
        out.brk()
    else:
        block = tag in BLOCK_TAGS
        if block:
            out.brk()
        if el.text:
            out.text(el.text)
        for ch in el:
            _walk(ch, out, exclude)
        if block:
            out.brk()
    if el.tail:
        out.text(el.tail)


def _raw_text(el, exclude):
    """Text of a <pre>, line breaks kept (<br> is a newline)."""
    parts = []

    def rec(e):
        for ch in e:
            t = ch.tag if isinstance(ch.tag, str) else None
            if t is not None:
                t = t.lower()
                if t in SKIP_TAGS or (exclude is not None and exclude(ch)):
                    pass
                elif t == "br":
                    parts.append("\n")
                else:
                    if ch.text:
                        parts.append(ch.text)
                    rec(ch)
            if ch.tail:
                parts.append(ch.tail)

    if el.text:
        parts.append(el.text)
    rec(el)
    return "".join(parts)


def visible_text(el, exclude=None):
    out = _Lines()
    _walk(el, out, exclude)
    out.brk()
    return "\n".join(out.lines)


def parse(html_bytes):
    text = html_bytes.decode("utf-8")
    return lxml.html.document_fromstring(text)


def find_first(root, pred):
    for el in root.iter(tag=etree.Element):
        if pred(el):
            return el
    return None


PY_OBJECT = re.compile(rb'<dl class="py ')  # a Sphinx Python object description
REFRESH = re.compile(rb"<meta[^>]+http-equiv\s*=\s*[\"']?refresh", re.I)

# ---------------------------------------------------------------- packages


def run(cmd, cwd=None, env=None):
    print("+", " ".join(cmd), file=sys.stderr)
    r = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode:
        sys.stderr.write(r.stderr)
        raise SystemExit(f"failed: {' '.join(cmd)}")


def fetch(pkg, work):
    """apt-get download + dpkg-deb -x; returns (version, unpack dir)."""
    if pkg in FORBIDDEN:
        raise SystemExit(f"{pkg} is held out")
    debs = work / "debs"
    debs.mkdir(exist_ok=True)
    found = list(debs.glob(f"{pkg}_*.deb"))
    if not found:
        run(["apt-get", "download", "-q", pkg], cwd=debs)
        found = list(debs.glob(f"{pkg}_*.deb"))
    deb = found[0]
    version = subprocess.run(
        ["dpkg-deb", "-f", str(deb), "Version"], check=True, capture_output=True, text=True
    ).stdout.strip()
    dest = work / "x" / pkg
    if not dest.exists():
        dest.mkdir(parents=True)
        run(["dpkg-deb", "-x", str(deb), str(dest)])
    return version, dest


def copyright_licences(dest):
    lic = set()
    for p in dest.glob("usr/share/doc/*/copyright"):
        for line in p.read_text(errors="replace").splitlines():
            if line.startswith("License:"):
                if line.split(":", 1)[1].strip():
                    lic.add(line.split(":", 1)[1].strip())
    return sorted(lic)


def _minimal_manifest(src_toml, features):
    """A Cargo.toml without dependencies (optional and dev ones only: checked)."""
    t = tomllib.loads(src_toml.read_text())
    deps = t.get("dependencies", {})
    for name, spec in deps.items():
        if not (isinstance(spec, dict) and spec.get("optional")):
            raise SystemExit(f"{src_toml}: non-optional dependency {name}")
    p = t["package"]
    feats = {}
    for k, v in t.get("features", {}).items():
        if k in deps:
            continue
        feats[k] = [x for x in v if not (x.startswith("dep:") or "/" in x or x in deps)]
    for f in features:
        if f not in feats:
            raise SystemExit(f"{src_toml}: no feature {f}")
    lines = [
        "[package]",
        f"name = {json.dumps(p['name'])}",
        f"version = {json.dumps(p['version'])}",
        f"edition = {json.dumps(p.get('edition', '2015'))}",
        "autotests = false",
        "autobenches = false",
        "autoexamples = false",
        "autobins = false",
    ]
    lib = t.get("lib", {})
    if "path" in lib:
        lines += ["[lib]", f"path = {json.dumps(lib['path'])}"]
    lines.append("[features]")
    for k, v in feats.items():
        lines.append(f"{json.dumps(k)} = {json.dumps([x for x in v if x in feats])}")
    lines.append("[workspace]")
    return "\n".join(lines) + "\n", p["name"], p["version"]


def build_rustdoc(site, work):
    """cargo doc of the site's crates into one target/doc; returns (root, info)."""
    target = work / f"rust-{site['site']}"
    if target.exists():
        shutil.rmtree(target)
    env = dict(
        os.environ,
        CARGO_TARGET_DIR=str(target / "target"),
        CARGO_HOME=str(work / "cargo-home"),
        CARGO_NET_OFFLINE="true",
        RUSTDOCFLAGS="",
        RUSTFLAGS="",
        SOURCE_DATE_EPOCH="0",
    )
    crates, sources, licences = [], [], set()
    for pkg, crate, features in site["crates"]:
        version, dest = fetch(pkg, work)
        reg = dest / "usr/share/cargo/registry"
        srcdir = next(reg.glob(f"{crate}-*"))
        licences.update(copyright_licences(dest))
        build = target / "src" / srcdir.name
        shutil.copytree(srcdir, build, symlinks=True)
        text, name, cver = _minimal_manifest(srcdir / "Cargo.toml", features)
        (build / "Cargo.toml").write_text(text)
        for lock in ("Cargo.lock", ".cargo_vcs_info.json", ".cargo-checksum.json"):
            (build / lock).unlink(missing_ok=True)
        cmd = ["cargo", "doc", "--offline", "--no-deps", "-j1", "--quiet"]
        if features:
            cmd += ["--features", ",".join(features)]
        run(cmd, cwd=build, env=env)
        crates.append({"package": pkg, "version": version, "crate": name, "crate_version": cver, "features": features})
        sources.append(f"{pkg} {version}")
    rv = subprocess.run(["rustdoc", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    return target / "target" / "doc", {
        "crates": crates,
        "rustdoc": rv,
        "sources": sources,
        "licences": sorted(licences),
    }


def rust_url(site):
    vers = {c["crate"].replace("-", "_"): (c["crate"], c["crate_version"]) for c in site["_info"]["crates"]}

    def url(rel):
        first = rel.split("/", 1)[0]
        if first in vers:
            crate, v = vers[first]
            return f"https://docs.rs/{crate}/{v}/{rel}"
        return "https://docs.rs/" + rel

    return url


def sphinx_version(paths):
    """ "Sphinx 5.3.0" from the "Created using Sphinx x.y.z" footer, else "Sphinx"."""
    for p in paths:
        m = re.search(rb"Created using\s+<a [^>]*>Sphinx</a>\s+([0-9.]+[0-9])", p.read_bytes())
        if m:
            return "Sphinx " + m.group(1).decode()
    return "Sphinx"


# ---------------------------------------------------------------- build


def candidates(root):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for fn in sorted(filenames):
            if not fn.endswith(".html"):
                continue
            p = Path(dirpath) / fn
            if p.is_symlink() or not p.is_file():
                continue
            out.append(p)
    return sorted(out, key=lambda p: str(p))


def build_site(site, work, out):
    name = site["site"]
    if site["generator"] == "rustdoc":
        docroot, info = build_rustdoc(site, work)
        site["_info"] = info
        roots = [(docroot, docroot, "target/doc")]
        source = "build:" + " + ".join(info["sources"]) + f" ({info['rustdoc']}, cargo doc)"
        site["url"] = rust_url(site)
        if site["template"] is None:
            site["template"] = (
                f"{info['rustdoc'].split(' (')[0]} (cargo doc --no-deps): "
                "top bar, left sidebar (crate name and version, item "
                "TOC, module navigation), search/settings/help toolbar"
            )
        versions = [f"{c['package']} {c['version']}" for c in info["crates"]]
        licences = info["licences"]
    else:
        version, dest = fetch(site["package"], work)
        roots = [(dest / r, dest, None) for r in site["roots"]]
        source = f"debian:{site['package']} {version}"
        versions = [f"{site['package']} {version}"]
        licences = copyright_licences(dest)
        if site["generator"] == "gi-docgen":
            gen = "gi-docgen"
            for p in candidates(roots[0][0])[:20]:
                m = re.search(rb"Generated by (?:<a [^>]*>)?gi-docgen(?:</a>)? ([0-9.]+)", p.read_bytes())
                if m:
                    gen = "gi-docgen " + m.group(1).decode()
                    break
            site["template"] = site["template"].replace("{gen}", gen)
        if site["generator"] == "sphinx":
            site["template"] = site["template"].replace("{gen}", sphinx_version(candidates(roots[0][0])[:20]))
        if site["template"] is None and site["generator"] == "javadoc":
            jv = "javadoc"
            for p in candidates(roots[0][0])[:50]:
                m = re.search(rb"<!-- Generated by javadoc \(([^)]*)\)", p.read_bytes())
                if m:
                    jv = "javadoc " + m.group(1).decode()
                    break
            if jv == "javadoc":  # the pages name only javadoc/ClassWriterImpl
                jv = "javadoc of OpenJDK 17 (bookworm's default-jdk; the markup is the JDK 17 doclet's)"
            site["template"] = (
                f"{jv}: top navbar (Overview/Package/"
                "Class/Use/Tree/Deprecated/Index/Help), sub-nav with "
                "summary/detail jump links and search box, copyright "
                "footer"
            )
    skipped, eligible = {}, []
    n_cand = 0
    for root, base, prefix in roots:
        for p in candidates(root):
            n_cand += 1
            rel = p.relative_to(root).as_posix()
            pkg_path = (prefix + "/" + rel) if prefix else p.relative_to(base).as_posix()
            why = None
            data = p.read_bytes()
            if site["skip"](rel):
                why = "skip-list"
            elif len(data) > MAX_BYTES:
                why = "html>150KB"
            elif REFRESH.search(data):
                why = "redirect"
            else:
                doc = parse(data)
                body = doc.find("body")
                page_text = visible_text(body if body is not None else doc)
                if len(page_text) < MIN_PAGE_CHARS:
                    why = "page-text<2048"
                else:
                    cont = find_first(doc, site["container"])
                    gold = visible_text(cont, site["exclude"]) if cont is not None else ""
                    if cont is None:
                        why = "no-container"
                    elif len(gold) < MIN_GOLD_CHARS:
                        why = "gold<300"
                    elif site.get("toc_page") and site["toc_page"](cont, gold):
                        why = "toc-page"
            if why:
                skipped[why] = skipped.get(why, 0) + 1
                continue
            eligible.append(
                {"path": p, "rel": rel, "pkg_path": pkg_path, "data": data, "page_text": page_text, "gold": gold}
            )
    eligible.sort(key=lambda e: e["pkg_path"])
    chosen = eligible
    if len(eligible) > SAMPLE:
        chosen = random.Random(0).sample(eligible, SAMPLE)
    chosen.sort(key=lambda e: e["pkg_path"])
    sdir = out / name
    (sdir / "pages").mkdir(parents=True)
    rows, shares, nbytes = [], [], 0
    for i, e in enumerate(chosen, 1):
        pid = f"{name}-{i:04d}"
        (sdir / "pages" / f"{pid}.html").write_bytes(e["data"])
        gold = e["gold"] + "\n"
        (sdir / "pages" / f"{pid}.txt").write_text(gold, encoding="utf-8")
        nbytes += len(e["data"]) + len(gold.encode())
        pt, gt = len(e["page_text"].split()), len(e["gold"].split())
        shares.append(gt / pt if pt else 0.0)
        rows.append(
            {
                "id": pid,
                "site": name,
                "url": site["url"](e["rel"]),
                "html": f"pages/{pid}.html",
                "gold": f"pages/{pid}.txt",
                "source": source,
                "pkg_path": e["pkg_path"],
                "template": site["template"],
                "page_bytes": len(e["data"]),
                "page_chars": len(e["page_text"]),
                "page_tokens": pt,
                "gold_chars": len(e["gold"]),
                "gold_tokens": gt,
            }
        )
    with open(sdir / "manifest.jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    nbytes += (sdir / "manifest.jsonl").stat().st_size
    stats = {
        "site": name,
        "generator": site["generator"],
        "packages": versions,
        "template": site["template"],
        "container_rule": site["rule"],
        "skip_list": site["skip_doc"],
        "licences_debian_copyright": licences,
        "candidates": n_cand,
        "skipped": dict(sorted(skipped.items())),
        "eligible": len(eligible),
        "pages": len(rows),
        "median_page_bytes": int(statistics.median(r["page_bytes"] for r in rows)),
        "median_gold_share": round(statistics.median(shares), 3),
        "bytes_on_disk": nbytes,
    }
    if site["generator"] == "sphinx":
        stats["pages_with_python_objects"] = sum(1 for e in chosen if PY_OBJECT.search(e["data"]))
    if site["generator"] == "rustdoc":
        stats["crates"] = site["_info"]["crates"]
        stats["rustdoc"] = site["_info"]["rustdoc"]
    stats["licence"] = site["licence"]
    return rows, stats, shares


GENERATORS = ("gi-docgen", "rustdoc", "javadoc", "sphinx")
DEFAULT_GENERATORS = ("gi-docgen", "rustdoc", "javadoc")  # api-dev
GENERATOR_ALIASES = {"gidocgen": "gi-docgen", "sphinx-autodoc": "sphinx"}
NUMBERS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
# what recurs across a generator's pages inside the container (and is gold)
GOLD_NOTES = {
    "rustdoc": 'trait/impl listings (rustdoc\'s "Trait Implementations", "Auto Trait '
    'Implementations", "Blanket Implementations")',
    "gi-docgen": 'gi-docgen\'s "Methods inherited from" / "Properties inherited from" '
    "blocks (collapsed by default in a browser, but in the markup)",
    "javadoc": 'javadoc\'s "Methods inherited from class" lists',
    "sphinx": 'Sphinx\'s field lists ("Parameters", "Returns", "Return type", "Raises"), '
    'version notes ("New in version ...", in the Pallets theme inside a "Changelog" '
    "`details` element, collapsed by default in a browser) and, on the SQLAlchemy "
    'pages, the "Class signature" lines and the "inherited from the ... method of ..." '
    "notes",
}


def _and(items):
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _shares(rows):
    return [r["gold_tokens"] / r["page_tokens"] if r["page_tokens"] else 0.0 for r in rows]


def write_readme(out, stats, all_rows, origin=None):
    """OUT/README.md; origin: the corpus the sites were copied from, if any."""
    all_shares = _shares(all_rows)
    total = sum(s["pages"] for s in stats)
    gens = [g for g in GENERATORS if any(s["generator"] == g for s in stats)]
    n_rust = sum(1 for s in stats if s["generator"] == "rustdoc")
    by = f"{len(gens)} generators" if len(gens) > 1 else f"one generator ({gens[0]})"
    built = ""
    if n_rust:
        built = (
            f"; the {NUMBERS.get(n_rust, n_rust)} rustdoc sites are built"
            if n_rust > 1
            else "; the rustdoc site is built"
        ) + (
            " from the crates' sources in Debian's "
            "`librust-*-dev` packages with `cargo doc --offline --no-deps` (optional and dev "
            "dependencies removed from the copied Cargo.toml)"
        )
    copied = f"  Copied from `{origin}` (same pages and golds) with `--split-by-generator`." if origin else ""
    lines = [
        f"# {out.name} (API-reference documentation sites, tool-made gold)",
        "",
        f"{total} pages of {len(stats)} API-reference sites made by {by}, taken from "
        "Debian 12 (bookworm) packages with `apt-get download` + `dpkg-deb -x` (nothing "
        f"installed){built}.  Built by "
        "`benchmarks/build_api_corpora.py` of sst-cleaner; layout, selection and gold "
        f"rules are those of docs-dev (shared/datasets/README.md).{copied}",
        "",
        "**Licence.** The pages are the packages' documentation (licences per each "
        "package's `debian/copyright`, below); copied unchanged **for evaluation only**: "
        "never ship a page or a gold text (or a fixture cut from one).",
        "",
        "| site | generator | package (bookworm) | pages (eligible) | content container, minus | median gold share |",
        "|---|---|---|---:|---|---:|",
    ]
    for s in stats:
        lines.append(
            f"| `{s['site']}` | {s['generator']} | {', '.join(s['packages'])} | "
            f"{s['pages']} ({s['eligible']}) | {s['container_rule']} | "
            f"{s['median_gold_share']:.3f} |"
        )
    size = sum(s["bytes_on_disk"] for s in stats)
    lines += [
        "",
        f"*Gold share* = gold tokens / tokens of the whole page's visible text "
        f"(median over the site's pages); {statistics.median(all_shares):.3f} over "
        f"all {total} pages.  Size: {size / 1e6:.1f} MB.",
        "",
    ]
    lines.append("Templates:")
    lines.append("")
    for s in stats:
        objects = ""
        if "pages_with_python_objects" in s:
            objects = (
                f"  Pages with a Python object description (`dl.py`: class, function, "
                f"method, ...): {s['pages_with_python_objects']} of {s['pages']}."
            )
        lines.append(
            f"* `{s['site']}`: {s['template']}.  Skip list: {s['skip_list']}.  "
            f"Candidates {s['candidates']}, skipped {json.dumps(s['skipped'])}.{objects}  "
            f"Licence: {s['licence']} (debian/copyright: "
            f"{', '.join(s['licences_debian_copyright'])})."
        )
    redirects = " (rustdoc's re-export redirect pages)" if n_rust else ""
    rust_path = "  For the rustdoc sites `pkg_path` is the path under the built `target/doc`." if n_rust else ""
    where = "the project's or docs.rs web site" if n_rust else "the project's web site"
    lines += [
        "",
        "* **Selection.** As docs-dev: `.html` files under the HTML root (no "
        "symlinks), minus the skip lists above, files over 150 KB, meta-refresh "
        f"redirects{redirects}, pages with fewer than "
        "2048 characters of visible text, golds under 300 characters; more than "
        "150 eligible: `random.Random(0).sample` of 150 (eligible in `pkg_path` "
        f"order); ids in `pkg_path` order.{rust_path}",
        "* **Gold.** The visible text of the first element matching the container, "
        "minus the exclusions and `script`/`style`/`noscript`/`template`, one line per "
        "block element (each line of a `pre` a line, `<br>` a break), whitespace "
        "collapsed.  Parsed with lxml (libxml2's HTML parser).  "
        + _and(["Signatures"] + [GOLD_NOTES[g] for g in ("rustdoc", "gi-docgen", "javadoc", "sphinx") if g in gens])
        + " are inside the containers and are gold: they repeat "
        "across the pages of a site but are each page's own API reference.",
        "* **What it tests.** Like docs-dev, little boilerplate outside the "
        "container (sidebars and navigation bars), but a lot of text that recurs "
        "inside it across pages of one template.",
        f"* **url** is indicative (where the page lives on {where}; versions may differ there).",
        "",
    ]
    (out / "README.md").write_text("\n".join(lines))


def write_corpus(out, rows, stats, origin=None):
    """OUT/manifest.jsonl (html/gold relative to OUT), stats.json, README.md."""
    with open(out / "manifest.jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    (out / "stats.json").write_text(json.dumps(stats, indent=1, ensure_ascii=False) + "\n")
    write_readme(out, stats, rows, origin)
    h = hashlib.sha256((out / "manifest.jsonl").read_bytes()).hexdigest()[:16]
    print(f"{len(rows)} pages -> {out} (manifest sha256 {h})", file=sys.stderr)


def _generators(spec):
    want = set()
    for g in spec.split(","):
        g = GENERATOR_ALIASES.get(g.strip(), g.strip())
        if g not in GENERATORS:
            raise SystemExit(f"unknown generator {g!r} (one of {', '.join(GENERATORS)})")
        want.add(g)
    return want


def split_by_generator(src, prefix=None):
    """Copy the sites of the built corpus src into one corpus per generator.

    The folders are PREFIX-<generator> (letters and digits only: api-gidocgen),
    PREFIX defaulting to src's folder/api; src is only read.
    """
    src = Path(src).resolve()
    stats = json.loads((src / "stats.json").read_text())
    rows = [json.loads(line) for line in (src / "manifest.jsonl").read_text().splitlines() if line.strip()]
    prefix = Path(prefix) if prefix else src.parent / "api"
    gens = list(dict.fromkeys(s["generator"] for s in stats))
    outs = []
    for gen in gens:
        dest = Path(f"{prefix}-{re.sub('[^a-z0-9]', '', gen.lower())}").resolve()
        if dest == src or dest in src.parents or src in dest.parents:
            raise SystemExit(f"{dest}: would overwrite {src}")
        sub = [s for s in stats if s["generator"] == gen]
        names = {s["site"] for s in sub}
        sub_rows = [r for r in rows if r["site"] in names]
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        for s in sub:
            shutil.copytree(src / s["site"], dest / s["site"])
        for r in sub_rows:
            for key in ("html", "gold"):
                if not (dest / r[key]).is_file():
                    raise SystemExit(f"{dest / r[key]}: missing")
        write_corpus(dest, sub_rows, sub, origin=src.name)
        outs.append(dest)
    return outs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "out",
        nargs="?",
        help="output folder (default /work/data/api-dev); with --split-by-generator "
        "the folders' prefix (default SRC's folder/api: api-gidocgen, api-rustdoc, ...)",
    )
    ap.add_argument("--work", help="work folder (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    ap.add_argument("--sites", help="comma-separated subset of site names")
    ap.add_argument(
        "--generators",
        help=f"comma-separated generators ({', '.join(GENERATORS)}; sphinx-autodoc = sphinx); "
        f"default {', '.join(DEFAULT_GENERATORS)} (api-dev), or all with --sites",
    )
    ap.add_argument(
        "--split-by-generator",
        metavar="SRC",
        help="build nothing: copy the sites of the built corpus SRC into one corpus per generator",
    )
    args = ap.parse_args(argv)
    if args.split_by_generator:
        split_by_generator(args.split_by_generator, args.out)
        return
    want = set(args.sites.split(",")) if args.sites else None
    if args.generators:
        gens = _generators(args.generators)
    else:  # api-dev's generators, unless sites are named
        gens = set(GENERATORS if want else DEFAULT_GENERATORS)
    sites = [s for s in SITES if (not want or s["site"] in want) and s["generator"] in gens]
    if not sites:
        raise SystemExit("no site selected")
    out = Path(args.out or "/work/data/api-dev")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="api-dev-"))
    work.mkdir(parents=True, exist_ok=True)
    all_rows, all_stats = [], []
    try:
        for site in sites:
            rows, stats, shares = build_site(site, work, out)
            print(
                f"{site['site']}: {stats['pages']} pages ({stats['eligible']} eligible, "
                f"{stats['candidates']} candidates) skipped {stats['skipped']} "
                f"gold share {stats['median_gold_share']}",
                file=sys.stderr,
            )
            all_stats.append(stats)
            for r in rows:
                r = dict(r, html=f"{r['site']}/{r['html']}", gold=f"{r['site']}/{r['gold']}")
                all_rows.append(r)
    finally:
        if not args.keep and not args.work:
            shutil.rmtree(work, ignore_errors=True)
    write_corpus(out, all_rows, all_stats)


if __name__ == "__main__":
    main()
