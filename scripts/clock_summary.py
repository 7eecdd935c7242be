"""Summarise the card's clocks over a run from `nvidia-smi --query-gpu=... --format=csv,noheader -lms N` samples.

    python scripts/clock_summary.py runs/grid/clocks.csv
    python scripts/clock_summary.py runs/grid/clocks.csv --shapes work/offline_gpu/shapes.jsonl  # + by shape size

Expects the fields timestamp, clocks.sm, clocks.mem, power.draw, temperature.gpu and, optionally, the active
clock-event (throttle) reasons as a hex mask, in that order (scripts/gpu_check.sh gemm_table_grid writes them).
Prints one line: samples, SM clock median and 10th-90th percentile, memory clock, power, temperature, and the share
of samples with each non-zero reason mask. Issue 6, session 29: two grids of one table differed by 12-14% on the
smallest shapes for every backend; this says whether the card ran at another clock. With --shapes (a bench-gemm
shapes.jsonl of the same run, on the same machine: its `finished_at` and `seconds` give each shape's window), a second
line gives the SM clock while the shapes under 1e8 FLOP ran and while the others did.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path

SMALL_FLOP = 1e8  # the grid's smallest work class


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


def _rows(lines: list[str], min_fields: int) -> list[list[str]]:
    """The samples' fields, of the lines with at least min_fields whose SM clock (the second) is a number: not a
    header, a partial last line (the sampler is killed mid-write) or an error message."""
    rows = ([f.strip() for f in line.split(",")] for line in lines)
    return [fields for fields in rows if len(fields) >= min_fields and _number(fields[1]) is not None]


def summarise(lines: list[str]) -> str:
    sm, mem, power, temp, reasons = [], [], [], [], Counter()
    for fields in _rows(lines, 5):
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


def _samples(lines: list[str]) -> list[tuple[float, float]]:
    """(Unix time, SM MHz) of each sample whose timestamp parses ('2026/12/03 22:01:02.123', the machine's local
    time, as time.time() is read there)."""
    out = []
    for fields in _rows(lines, 2):
        try:
            out.append((datetime.strptime(fields[0], "%Y/%m/%d %H:%M:%S.%f").timestamp(), _number(fields[1])))
        except ValueError:
            continue
    return out


def by_shape_size(lines: list[str], records: list[dict]) -> str:
    """The SM clock's median over the samples inside the windows of shapes under SMALL_FLOP, and of the others."""
    small, other = [], []
    for rec in records:
        if "finished_at" not in rec:
            continue
        end = float(rec["finished_at"])
        start = end - float(rec.get("seconds") or 0.0)
        (small if 2.0 * rec["m"] * rec["n"] * rec["k"] < SMALL_FLOP else other).append((start, end))
    if not small and not other:
        return "clocks by shape size: the shapes log has no finished_at (written before session 29)"
    samples = _samples(lines)

    def median_in(windows: list[tuple[float, float]]) -> str:
        inside = [sm for t, sm in samples if any(a <= t <= b for a, b in windows)]
        return f"{statistics.median(inside):.0f} MHz ({len(inside)} samples)" if inside else "no samples"

    return (f"clocks by shape size: SM median while shapes < {SMALL_FLOP:.0e} FLOP ran {median_in(small)}; "
            f"while the others ran {median_in(other)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("clocks", help="nvidia-smi --format=csv,noheader samples")
    ap.add_argument("--shapes", help="the same run's bench-gemm shapes.jsonl: the clock by shape size as well")
    args = ap.parse_args(argv)
    try:
        lines = Path(args.clocks).read_text().splitlines()
    except OSError as e:
        print(f"{args.clocks}: {e.strerror}; give the CSV nvidia-smi -lms wrote", file=sys.stderr)
        return 2
    print(summarise(lines))
    if args.shapes:
        try:
            records = [json.loads(x) for x in Path(args.shapes).read_text().splitlines() if x.strip().endswith("}")]
        except (OSError, json.JSONDecodeError) as e:
            print(f"{args.shapes}: {getattr(e, 'strerror', None) or e}; give bench-gemm's shapes.jsonl", file=sys.stderr)
            return 2
        print(by_shape_size(lines, records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
