"""Live progress of a search with rich: best speedup, candidates evaluated, failures by stage."""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.live import Live
from rich.table import Table


class SearchProgress:
    """A one-table live view; `quiet=True` makes every call a no-op (tests, library use)."""

    def __init__(self, quiet: bool = False, console: Console | None = None):
        self.quiet = quiet
        self.console = console or Console(stderr=True)
        self._live: Live | None = None
        self.state: dict = {}
        self.failures: Counter = Counter()

    def __enter__(self) -> "SearchProgress":
        if not self.quiet:
            self._live = Live(self._render(), console=self.console, refresh_per_second=4, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.update(self._render())
            self._live.__exit__(*exc)
            self._live = None

    def update(self, **state) -> None:
        self.state.update(state)
        if self._live is not None:
            self._live.update(self._render())

    def record(self, status: str, stage: str) -> None:
        if status != "ok":
            self.failures[f"{status}@{stage}" if stage else status] += 1
        self.update()

    def log(self, message: str) -> None:
        if not self.quiet:
            self.console.print(message)

    def _render(self) -> Table:
        s = self.state
        t = Table(title=f"cudaopt optimize: {s.get('task', '')}", show_header=False, expand=False)
        best = s.get("best")
        t.add_row("round", f"{s.get('round', 0)} / {s.get('rounds', '?')}")
        t.add_row("candidates", f"{s.get('evaluated', 0)} / {s.get('budget', '?')}")
        t.add_row("best speedup", f"{best:.2f}x" if best is not None else "-")
        t.add_row("failures", ", ".join(f"{k}: {v}" for k, v in self.failures.most_common()) or "none")
        if s.get("phase"):
            t.add_row("now", s["phase"])
        return t
