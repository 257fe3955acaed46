"""Check an installed wheel: its engine is the compiled build and it cleans a page of a
generated site as a fitted model should (run by cibuildwheel after each wheel's build,
outside the source tree).

    python benchmarks/wheel_check.py
"""

from __future__ import annotations

import sys

import sst_cleaner
from sst_cleaner import SiteCleaner


def page(i: int) -> str:
    return (
        f"<html><head><title>Story {i}</title></head><body><nav><a href='/'>Home</a> <a href='/n'>News</a></nav>"
        f"<article><h1>Headline number {i}</h1><p>The council met on day {i} to discuss the river bridge "
        f"and the new library near the station.</p><p>Residents said plan {i} was good for the city.</p>"
        "</article><footer>Copyright Example Daily, all rights reserved.</footer></body></html>"
    )


def main() -> int:
    if sst_cleaner.ENGINE_BUILD != "compiled":
        print(f"the wheel's engine is {sst_cleaner.ENGINE_BUILD}, not compiled", file=sys.stderr)
        return 1
    cleaner = SiteCleaner().fit([page(i) for i in range(6)])
    text = cleaner.clean(page(7)).text
    if "river bridge" not in text or "Home" in text:
        print(f"unexpected clean text: {text!r}", file=sys.stderr)
        return 1
    print(f"sst-cleaner {sst_cleaner.__version__}: compiled engine, cleans as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
