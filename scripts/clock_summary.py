"""Summarise the card's clocks over a run from `nvidia-smi --query-gpu=... --format=csv,noheader -lms N` samples.

    python scripts/clock_summary.py runs/grid/clocks.csv

Expects the fields timestamp, clocks.sm, clocks.mem, power.draw, temperature.gpu and, optionally, the active
clock-event (throttle) reasons as a hex mask, in that order (scripts/gpu_check.sh gemm_table_grid writes them).
Prints one line: samples, SM clock median and 10th-90th percentile, memory clock, power, temperature, and the share
of samples with each non-zero reason mask. Issue 6, session 29: two grids of one table differed by 12-14% on the
smallest shapes for every backend; this says whether the card ran at another clock.
"""

from __future__ import annotations

import statistics
import sys
from collections import Counter
from pathlib import Path


def _number(field: str) -> float | None:
    """'1980 MHz' / '351.20 W' / '45' -> the number; '[N/A]' and the like -> None."""
    head = field.strip().split(" ")[0]
    try:
        return float(head)
    except ValueError:
        return None


def _mask(field: str) -> int:
    """'0x0000000000000004' -> 4; anything else ('[N/A]', 'Not Active') -> 0."""
    try:
        return int(field, 16)
    except ValueError:
        return 0


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def summarise(lines: list[str]) -> str:
    sm, mem, power, temp, reasons = [], [], [], [], Counter()
    for line in lines:
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 5 or _number(fields[1]) is None:
            continue  # a header, a partial last line (the sampler is killed mid-write), an error message
        sm.append(_number(fields[1]))
        for values, f in ((mem, fields[2]), (power, fields[3]), (temp, fields[4])):
            if (v := _number(f)) is not None:
                values.append(v)
        if len(fields) > 5:
            reasons[fields[5]] += 1
    if not sm:
        return "clocks: no samples (nvidia-smi wrote none the script could read)"
    out = (f"clocks: {len(sm)} samples; SM median {statistics.median(sm):.0f} MHz (p10 {_pct(sm, 0.1):.0f}, "
           f"p90 {_pct(sm, 0.9):.0f})")
    if mem:
        out += f"; mem {statistics.median(mem):.0f} MHz"
    if power:
        out += f"; power median {statistics.median(power):.0f} W, max {max(power):.0f} W"
    if temp:
        out += f"; temp median {statistics.median(temp):.0f} C, max {max(temp):.0f} C"
    busy = {r: n for r, n in reasons.items() if _mask(r)}
    if reasons:
        total = sum(reasons.values())
        out += "; reasons " + (", ".join(f"{r} {100 * n / total:.0f}%" for r, n in
                                         sorted(busy.items(), key=lambda x: -x[1])) or "none")
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: clock_summary.py CLOCKS.csv (nvidia-smi --format=csv,noheader samples)", file=sys.stderr)
        return 2
    try:
        lines = Path(args[0]).read_text().splitlines()
    except OSError as e:
        print(f"{args[0]}: {e.strerror}; give the CSV nvidia-smi -lms wrote", file=sys.stderr)
        return 2
    print(summarise(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
