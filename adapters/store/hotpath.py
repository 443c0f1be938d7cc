"""Helpers for the bulk paths (import, catch-up, rebuild)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector around a bulk step.

    A cell batch allocates hundreds of thousands of small container objects;
    each allocation burst triggers collections that rescan everything alive and
    halved ingest throughput here. The bulk paths create no reference cycles, so
    reference counting frees their garbage; the collector resumes afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
