"""The compiled engine (Cython builds of the engine's modules, see setup.py) and the pure
Python one are the same program: which one runs is reported, and a build never lags
behind the sources it was made from."""

from __future__ import annotations

import ast
import importlib.machinery
import os
import subprocess
import sys
from pathlib import Path

import pytest

import sst_cleaner
from sst_cleaner import ENGINE_BUILD, SiteCleaner

ENGINE = Path(sst_cleaner.__file__).resolve().parent / "engine"
ROOT = ENGINE.parent.parent
_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)


def _builds() -> dict[Path, Path]:
    """Every compiled module of the engine beside the source it was built from."""
    found = {}
    for path in ENGINE.rglob("*"):
        for suffix in _SUFFIXES:
            if path.name.endswith(suffix):
                found[path] = path.with_name(path.name[: -len(suffix)] + ".py")
                break  # the longest suffix first: ".cpython-311-x86_64-linux-gnu.so" before ".so"
    return found


def test_the_engine_build_is_the_one_this_installation_is_expected_to_have():
    # CI says which build each of its runs installed; without it, a build is either
    # wholly compiled or wholly pure (a half-built engine means a failed compile)
    expected = os.environ.get("SST_EXPECT_ENGINE_BUILD")
    if expected:
        assert ENGINE_BUILD == expected
    builds = _builds()
    if ENGINE_BUILD == "compiled":
        built = set(builds.values())
        listed = {ROOT / name for name in _compiled_list()}
        assert listed <= built, f"not compiled: {sorted(str(p) for p in listed - built)}"
    else:
        assert not builds


def _compiled_list() -> list[str]:
    """setup.py's COMPILED: the modules the compiled build is made of."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "COMPILED":
            return ast.literal_eval(node.value)
    raise AssertionError("setup.py names no COMPILED modules")


def test_no_compiled_module_is_older_than_its_source():
    # Python imports a module's compiled build before its source: an engine module edited
    # after the build would silently not run. Rebuild with `pip install -e .`.
    stale = [str(so) for so, py in _builds().items() if py.exists() and py.stat().st_mtime > so.stat().st_mtime]
    assert not stale, f"rebuild (pip install -e .): these builds are older than their sources: {stale}"


def test_the_command_line_says_which_engine_runs():
    out = subprocess.run(
        [sys.executable, "-m", "sst_cleaner", "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert f"({ENGINE_BUILD} engine)" in out


@pytest.mark.parametrize("method", ["default", "cetd", "sst"])
def test_a_fitted_cleaner_survives_a_round_trip_through_a_file(tmp_path, method):
    # compiled classes and functions must still save and load as the pure ones do
    from docsite import site

    pages = [html for _url, html in site(6)]
    cleaner = SiteCleaner(method=method).fit(pages[:5])
    path = tmp_path / "site.json"
    cleaner.save(str(path))
    again = SiteCleaner.load(str(path))
    assert again.clean(pages[5]).text == cleaner.clean(pages[5]).text
    assert cleaner.clean(pages[5]).text
