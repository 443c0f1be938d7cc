"""Helpers for the bulk paths (import, catch-up, rebuild)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Fewer events than this are folded in process, not in a forked child (`fold_ahead`,
# imported only for a catch-up this large): forking would cost more than it saves.
# Measured on imports of orchestrator.sqlite: at 6k events the two took the same
# time; at 13.7k (10k rows), folding ahead took 12.6-12.9 s against 14.5-14.8.
FOLD_AHEAD_EVENTS = 10_000


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
