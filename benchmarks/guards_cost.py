"""What the static guards cost: scan() time per candidate over the red-team suite and the seed corpus.

    python benchmarks/guards_cost.py [--repeat 20]

Prints one row per group (mean and max milliseconds per candidate, and the slowest file). The budget is
50 ms per candidate (issue 3); this measures, it does not assert.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from cudaopt.guards.static import scan

ROOT = Path(__file__).resolve().parents[1]
GROUPS = {
    "redteam attacks": ROOT / "tests/redteam/attacks",
    "redteam honest": ROOT / "tests/redteam/honest",
    "seed corpus": ROOT / "src/cudaopt/tasks/corpus",
}


def time_scan(source: str, repeat: int) -> float:
    """Best-of-`repeat` milliseconds for one scan (the minimum filters scheduler noise on a shared CPU)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        scan(source, device="cuda")
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    print(f"{'group':<18} {'files':>5} {'mean ms':>8} {'max ms':>8}  slowest")
    everything = []
    for name, folder in GROUPS.items():
        files = sorted(folder.rglob("*.py")) if folder.exists() else []
        times = [(time_scan(f.read_text(), args.repeat), f) for f in files]
        everything += times
        if times:
            worst = max(times)
            print(f"{name:<18} {len(times):>5} {statistics.mean(t for t, _ in times):>8.2f} {worst[0]:>8.2f}  {worst[1].name}")
    if everything:
        print(f"{'all':<18} {len(everything):>5} {statistics.mean(t for t, _ in everything):>8.2f} {max(everything)[0]:>8.2f}")


if __name__ == "__main__":
    main()
