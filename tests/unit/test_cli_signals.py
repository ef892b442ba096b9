"""SIGINT/SIGTERM handling of the CLI, with real signals sent to this process (the handlers are restored after)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from ragindex.cli.signals import Interrupted, StopSignals


@pytest.fixture
def stops() -> Iterator[StopSignals]:
    handlers = StopSignals()
    handlers.install()
    try:
        yield handlers
    finally:
        handlers.restore()


def _send(signum: int) -> None:
    os.kill(os.getpid(), signum)  # the handler runs in this thread as soon as the call returns


def test_outside_safe_points_a_signal_stops_at_once(stops: StopSignals) -> None:
    with pytest.raises(Interrupted) as info:
        _send(signal.SIGTERM)
    assert info.value.exit_code == 143 and "run the same command again to finish" in info.value.message
    _send(signal.SIGTERM)  # a stop is under way: the clean-up is not interrupted again


def test_in_safe_points_the_first_signal_waits_for_the_checkpoint(
    stops: StopSignals, capfd: pytest.CaptureFixture[str]
) -> None:
    with stops.safe_points():
        stops.checkpoint()  # nothing asked yet
        _send(signal.SIGINT)
        assert stops.pending == signal.SIGINT
        assert "stopping after the current file or batch (press Ctrl-C again" in capfd.readouterr().err
        with pytest.raises(Interrupted) as info:
            stops.checkpoint()
    assert info.value.exit_code == 130


def test_a_second_signal_does_not_wait(stops: StopSignals) -> None:
    with stops.safe_points():
        _send(signal.SIGTERM)
        with pytest.raises(Interrupted) as info:
            _send(signal.SIGTERM)
    assert info.value.signum == signal.SIGTERM


def test_a_signal_after_the_last_checkpoint_does_not_undo_finished_work(stops: StopSignals) -> None:
    with stops.safe_points():
        _send(signal.SIGINT)
    assert stops.pending is None
    stops.checkpoint()
    with pytest.raises(Interrupted):  # and the next signal, outside the block, stops at once
        _send(signal.SIGINT)


def test_restore_gives_the_signals_back() -> None:
    before = signal.getsignal(signal.SIGINT)
    handlers = StopSignals()
    handlers.install()
    assert signal.getsignal(signal.SIGINT) != before
    handlers.restore()
    assert signal.getsignal(signal.SIGINT) == before
