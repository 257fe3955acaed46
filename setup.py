# The project is described in pyproject.toml. This file adds the compiled hot path: the
# engine's modules compiled by Cython from the same .py sources (Cython's pure-Python
# mode, with a .pxd beside a module where C types pay). Where Cython or a C compiler is
# missing, or SST_CLEANER_PURE_PYTHON is set, the package installs as pure Python and
# behaves the same, only slower.
from __future__ import annotations

import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

# The engine's per-page work (page preparation, blocks and sentences, the default method's
# evidence and verdict, CETD, the output formats), where the interpreter's overhead is
# most of the cost. The rest (model files, the registry, the Scrapy layer, the CLI, the
# tools) runs per crawl or per file and stays interpreted.
COMPILED = [
    "sst_cleaner/engine/_attr_cap.py",
    "sst_cleaner/engine/_dom.py",
    "sst_cleaner/engine/_formats.py",
    "sst_cleaner/engine/_metadata.py",
    "sst_cleaner/engine/_result.py",
    "sst_cleaner/engine/_segment.py",
    "sst_cleaner/engine/_text.py",
    "sst_cleaner/engine/_tree_caps.py",
    "sst_cleaner/engine/_tree_table.py",
    "sst_cleaner/engine/methods/cetd.py",
    "sst_cleaner/engine/methods/sitestats/_analysis.py",
    "sst_cleaner/engine/methods/sitestats/_names.py",
    "sst_cleaner/engine/methods/sitestats/_page_context.py",
    "sst_cleaner/engine/methods/sitestats/_regions.py",
    "sst_cleaner/engine/methods/sitestats/_scorer.py",
    "sst_cleaner/engine/methods/sitestats/hybrid.py",
    "sst_cleaner/engine/methods/sitestats/site_stats.py",
    "sst_cleaner/engine/methods/sst/page_style_tree.py",
]


def _extensions() -> list:
    if os.environ.get("SST_CLEANER_PURE_PYTHON"):
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("sst-cleaner: Cython not found, installing the pure-Python engine", file=sys.stderr)
        return []
    try:
        return cythonize(
            COMPILED + _pyx_extensions(),
            compiler_directives={
                "language_level": 3,
                # a compiled module keeps Python's semantics: annotations are documentation
                # (int and float stay Python objects unless a .pxd says otherwise)
                "annotation_typing": False,
                "binding": True,
            },
            quiet=True,
            nthreads=os.cpu_count() or 1,
        )
    except Exception as exc:  # a Cython too old or too new for the sources
        print(f"sst-cleaner: Cython failed ({exc}), installing the pure-Python engine", file=sys.stderr)
        return []


def _pyx_extensions() -> list:
    """The modules written in Cython itself (``.pyx``), each with a pure-Python
    equivalent that runs where it is missing: the walk over libxml2's nodes (built only
    where lxml's headers are found), the scorer's tree walk over C doubles, the scan
    for words shaped like code and the scan of a page's start tags for the attribute cap."""
    from setuptools import Extension

    sitestats = "sst_cleaner/engine/methods/sitestats/"
    extensions = [
        Extension((sitestats + name).replace("/", "."), [sitestats + name + ".pyx"])
        for name in ("_trees", "_code_marks")
    ]
    extensions.append(Extension("sst_cleaner.engine._attr_scan", ["sst_cleaner/engine/_attr_scan.pyx"]))
    try:
        import lxml
    except ImportError:
        return extensions
    walk = Extension("sst_cleaner.engine._walk", ["sst_cleaner/engine/_walk.pyx"], include_dirs=lxml.get_include())
    return extensions + [walk]


class OptionalBuildExt(build_ext):
    """A failed compile leaves the pure-Python module in place instead of failing the
    install: the compiled path is an optimisation only."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if self.parallel is None:  # compile the modules side by side
            self.parallel = os.cpu_count() or 1

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler, no Python headers
            print(f"sst-cleaner: compiled path not built ({exc}); using pure Python", file=sys.stderr)

    def build_extension(self, ext) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            print(f"sst-cleaner: {ext.name} not compiled ({exc}); using pure Python", file=sys.stderr)


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
