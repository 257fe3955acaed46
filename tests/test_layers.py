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
