"""Stopping a search cleanly on SIGTERM (`timeout`, job schedulers), as Ctrl-C does.

The handler raises KeyboardInterrupt only inside `interruptible()` (while candidates are generated and
evaluated); a signal that arrives elsewhere (a task's outputs being written, the suite report) is kept and
takes effect at the next `interruptible()`, so what is being written is never cut in half."""

from __future__ import annotations

import contextlib
import signal

_state = {"armed": False, "requested": False}

# How a search that was stopped (Ctrl-C, SIGTERM) says so in its `stopped` field.
INTERRUPTED = "interrupted (everything evaluated so far is stored; --resume continues)"


def _on_sigterm(signum, frame) -> None:
    _state["requested"] = True
    if _state["armed"]:
        _state["armed"] = False
        raise KeyboardInterrupt


@contextlib.contextmanager
def interruptible():
    """The part of a search that a SIGTERM may cut short (everything it evaluates is stored as it goes)."""
    if _state["requested"]:
        raise KeyboardInterrupt
    _state["armed"] = True
    try:
        yield
    finally:
        _state["armed"] = False


@contextlib.contextmanager
def sigterm_stops_search():
    """Install the handler for the duration (main thread only; elsewhere this does nothing)."""
    _state.update(armed=False, requested=False)
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread: signals cannot be handled here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        _state.update(armed=False, requested=False)
