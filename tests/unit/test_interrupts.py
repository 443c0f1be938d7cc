"""SIGTERM and SIGHUP unwind like Ctrl-C while a long command runs, and only then."""

from __future__ import annotations

import os
import signal

import pytest

from benchledger.commands.interrupts import stopped_like_ctrl_c


class TestStoppedLikeCtrlC:
    @pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
    def test_the_signal_raises_keyboard_interrupt_and_cleanup_runs(self, signum: int) -> None:
        cleaned = []
        with pytest.raises(KeyboardInterrupt), stopped_like_ctrl_c():
            try:
                os.kill(os.getpid(), signum)
            finally:
                cleaned.append(True)
        assert cleaned == [True]

    def test_the_handlers_before_it_are_restored(self) -> None:
        before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
        with stopped_like_ctrl_c():
            assert signal.getsignal(signal.SIGTERM) is not before[signal.SIGTERM]
        assert {s: signal.getsignal(s) for s in before} == before
