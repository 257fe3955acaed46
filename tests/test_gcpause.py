"""A fit pauses the cyclic garbage collector; the caller must get it back as it was."""

import gc
import threading

import pytest

from sst_cleaner import SiteCleaner
from sst_cleaner.engine._gcpause import gc_paused

PAGES = [f"<html><body><nav>Home About</nav><p>Story {i} about topic {i * 7}.</p></body></html>" for i in range(4)]


def test_fit_restores_an_enabled_collector_even_when_it_fails():
    assert gc.isenabled()
    SiteCleaner().fit(PAGES)
    assert gc.isenabled()

    def bad_pages():
        yield PAGES[0]
        assert not gc.isenabled()  # the pause is on while pages are read
        raise RuntimeError("broken page source")

    with pytest.raises(RuntimeError):
        SiteCleaner().fit(bad_pages())
    assert gc.isenabled()


def test_fit_leaves_a_disabled_collector_disabled():
    gc.disable()
    try:
        SiteCleaner().fit(PAGES)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_pauses_in_threads_end_with_the_last_one():
    first_in, release = threading.Event(), threading.Event()

    def hold():
        with gc_paused():
            first_in.set()
            release.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    first_in.wait(10)
    with gc_paused():
        pass
    assert not gc.isenabled()  # the other thread's pause is still on
    release.set()
    t.join(10)
    assert gc.isenabled()


def test_clean_pauses_the_collector_and_restores_it():
    cleaner = SiteCleaner().fit(PAGES)
    seen = []
    impl_clean = cleaner._impl.clean

    def spying(page):
        seen.append(gc.isenabled())
        return impl_clean(page)

    cleaner._impl.clean = spying
    cleaner.clean(PAGES[0])
    assert seen == [False] and gc.isenabled()


def test_a_non_joining_pause_never_outlasts_the_pause_it_met():
    inside, release = threading.Event(), threading.Event()

    def hold():
        with gc_paused(join=False):
            inside.set()
            release.wait(10)

    with gc_paused():
        t = threading.Thread(target=hold)
        t.start()
        inside.wait(10)
    # the other thread's block began during this pause: it did not join it
    assert gc.isenabled()
    release.set()
    t.join(10)
    assert gc.isenabled()
