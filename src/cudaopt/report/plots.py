"""The speedup histogram (matplotlib, optional: without it the report says the plot was skipped)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def speedup_histogram(speedups: Sequence[float], path: str | Path, title: str = "Speedup of correct candidates",
                      counted: str = "candidates") -> Path | None:
    """Write a PNG histogram of speedups with the 1.0x line marked; None when matplotlib is missing."""
    if not have_matplotlib():
        return None
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=120)
    if speedups:
        ax.hist(list(speedups), bins=min(30, max(5, len(speedups))), color="#4477aa", edgecolor="white")
    else:
        ax.text(0.5, 0.5, "no correct candidates", ha="center", va="center", transform=ax.transAxes)
    ax.axvline(1.0, color="#cc3311", linestyle="--", linewidth=1, label="reference (1.0x)")
    ax.set_xlabel("speedup over the reference (x)")
    ax.set_ylabel(counted)
    ax.set_title(title)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
