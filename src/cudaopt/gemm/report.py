"""Write benchmark results as CSV (per shape and summary), Markdown, and a PNG of speedup vs size."""

from __future__ import annotations

import csv
import math
from pathlib import Path

from cudaopt.gemm.shapes import Shape, flops, log2_mnk, work_class
from cudaopt.gemm.stats import SpeedupSummary


def write_shape_csv(path: Path, times: dict[str, dict[Shape, float]], extra: dict[Shape, dict] | None = None) -> None:
    """One row per shape: M, N, K, 2MNK, class, then one time column (us) per candidate."""
    names = sorted(times)
    shapes = sorted({s for t in times.values() for s in t}, key=lambda s: (flops(s), s))
    extra = extra or {}
    extra_cols = sorted({c for d in extra.values() for c in d})
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["m", "n", "k", "flops", "work_class", *[f"{n}_us" for n in names], *extra_cols])
        for s in shapes:
            row = [*s, f"{flops(s):.4g}", work_class(s)]
            row += [f"{times[n][s]:.3f}" if s in times[n] else "" for n in names]
            row += [extra.get(s, {}).get(c, "") for c in extra_cols]
            w.writerow(row)


def write_summary_csv(path: Path, rows: list[SpeedupSummary]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["baseline", "group", "n", "mean_speedup", "geomean_speedup", "median_ratio", "win_rate", "min_ratio"])
        for r in rows:
            w.writerow([r.baseline, r.group, r.n, f"{r.mean_speedup:.4f}", f"{r.geomean_speedup:.4f}",
                        f"{r.median_ratio:.4f}", f"{r.win_rate:.3f}", f"{r.min_ratio:.4f}"])


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x * 100:+.1f}%"


def summary_markdown(rows: list[SpeedupSummary], title: str) -> str:
    lines = [f"### {title}", "",
             "| baseline | class | shapes | mean(t_ref/t_ours - 1) | geomean - 1 | median ratio | win rate | min ratio |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r.baseline} | {r.group} | {r.n} | {_pct(r.mean_speedup)} | {_pct(r.geomean_speedup)} | "
                     f"{r.median_ratio:.3f} | {r.win_rate * 100:.0f}% | {r.min_ratio:.3f} |")
    return "\n".join(lines) + "\n"


def plot_speedups(path: Path, per_baseline: dict[str, dict[Shape, float]], title: str) -> bool:
    """Scatter of t_ref/t_ours against log2(MNK), one series per baseline. False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(9, 5))
    for name, r in per_baseline.items():
        xs = [log2_mnk(s) for s in r]
        ax.scatter(xs, list(r.values()), s=10, alpha=0.6, label=name)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("log2(M*N*K)")
    ax.set_ylabel("speedup t_ref / t_ours")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
