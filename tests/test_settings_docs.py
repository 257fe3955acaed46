"""docs/settings.md against the one description of the settings (sst_cleaner.scrapy._settings):
every setting documented with its type and default, and no documented setting that does
not exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from sst_cleaner.scrapy._settings import SETTINGS

ROOT = Path(__file__).resolve().parent.parent
SETTINGS_MD = ROOT / "docs" / "settings.md"
#: SST_* names the docs mention that are environment variables of the test suite
#: (tests/redis_server.py, tests/conftest.py), not settings
# environment variables of the tests and the build, not Scrapy settings
TEST_ENVIRONMENT = {"SST_REDIS_SERVER", "SST_REDIS_TESTS", "SST_CLEANER_PURE_PYTHON", "SST_EXPECT_ENGINE_BUILD"}


def _documented() -> dict[str, tuple[str, str]]:
    """name -> (type, default) of each row of the tables under "## Settings"."""
    section = SETTINGS_MD.read_text(encoding="utf-8").split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        name = re.fullmatch(r"`(SST_[A-Z0-9_]+)`", cells[0])
        if name:
            assert name[1] not in rows, f"{name[1]} documented twice"
            rows[name[1]] = (cells[1], cells[2])
    return rows


def _literal(default_cell: str) -> object:
    """The value in the first `...` of a Default cell (what follows it only explains)."""
    match = re.match(r"`([^`]*)`", default_cell)
    assert match, f"no `value` in {default_cell!r}"
    return ast.literal_eval(match[1])


def test_every_setting_is_documented_with_its_type_and_default():
    documented = _documented()
    assert sorted(set(SETTINGS) - set(documented)) == [], "settings missing from docs/settings.md"
    assert sorted(set(documented) - set(SETTINGS)) == [], "docs/settings.md lists settings that do not exist"
    for name, (type_, default_cell) in documented.items():
        spec = SETTINGS[name]
        assert type_ == spec.type, name
        default = _literal(default_cell)
        assert (type(default), default) == (type(spec.default), spec.default), name


def test_the_docs_mention_no_setting_that_does_not_exist():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    mentioned = {
        (page.name, name)
        for page in pages
        for name in re.findall(r"\bSST_[A-Z0-9_]*[A-Z0-9]\b", page.read_text(encoding="utf-8"))
    }
    assert (
        sorted((page, name) for page, name in mentioned if name not in SETTINGS and name not in TEST_ENVIRONMENT) == []
    )
