"""The ``sst-cleaner`` command line (stored pages, folders, WARC files, stdin)."""

from sst_cleaner.cli._main import main

__all__ = ["main"]
