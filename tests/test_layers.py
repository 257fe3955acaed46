"""The layers' dependency direction: the engine imports neither Scrapy nor Twisted nor
anything above it (the Scrapy layer, the tools, the CLI), so it runs anywhere."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ENGINE = Path(__file__).resolve().parent.parent / "sst_cleaner" / "engine"
FORBIDDEN = ("scrapy", "twisted", "sst_cleaner.scrapy", "sst_cleaner.tools", "sst_cleaner.cli")


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def test_engine_sources_import_nothing_above_the_engine():
    modules = sorted(ENGINE.rglob("*.py"))
    assert len(modules) > 20
    bad = [
        (p.relative_to(ENGINE).as_posix(), name)
        for p in modules
        for name in _imports(p)
        if any(name == f or name.startswith(f + ".") for f in FORBIDDEN)
    ]
    assert not bad


def test_using_the_engine_loads_no_scrapy_or_twisted():
    code = (
        "import sys, sst_cleaner\n"
        "from sst_cleaner import SiteCleaner, available_methods\n"
        "pages = [('http://s.com/%d' % i, '<html><body><nav>Home News</nav><p>Story %d of the day, "
        "told in full.</p></body></html>' % i) for i in range(3)]\n"
        "for m in available_methods():\n"
        "    c = SiteCleaner(method=m).fit(pages)\n"
        "    SiteCleaner.from_dict(c.to_dict()).clean(pages[0][1])\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] in ('scrapy', 'twisted')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


SCRAPY = ENGINE.parent / "scrapy"
#: circles allowed for now (none)
KNOWN_CIRCLES: list[list[str]] = []


def _scrapy_imports(path: Path) -> set[str]:
    """The Scrapy layer's modules ``path`` imports, anywhere in it (type-only and
    function-level imports too: a circle there is still one a reader has to hold)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.level == 1:
                names.add(node.module.split(".")[0])
            elif node.module.startswith("sst_cleaner.scrapy."):
                names.add(node.module.split(".")[2])
    return names


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_the_scrapy_layer_has_no_import_circle():
    graph = {p.stem: _scrapy_imports(p) for p in SCRAPY.glob("*.py")}
    assert len(graph) > 10 and graph["_middleware"]
    assert _circles(graph) == KNOWN_CIRCLES


def test_the_circle_finder_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []
