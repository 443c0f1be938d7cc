"""SIGTERM and SIGHUP stop a long-running command as Ctrl-C does, cleaning up on the way.

Python's default for both ends the process at once: no `finally` runs, so a
temporary folder (`serve --as-of`'s snapshot) is left behind. Raised as
KeyboardInterrupt instead, they unwind like Ctrl-C. A server that catches them
first to shut down gracefully (uvicorn) raises them again when it is done, and
then they unwind here.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

STOPPING = (signal.SIGTERM, signal.SIGHUP)


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


@contextmanager
def stopped_like_ctrl_c() -> Iterator[None]:
    """Within: SIGTERM and SIGHUP raise KeyboardInterrupt (main thread only: elsewhere
    Python cannot set a handler, and the defaults stay)."""
    try:
        before = {signum: signal.signal(signum, _interrupt) for signum in STOPPING}
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
