"""What cuBLASLt runs where the shipped table hands a shape to it: each cuBLASLt fallback entry's algorithm
(the `lt_fallback.algo_info` its tuning recorded) in our row-major frame, beside the table's own kernel.

    python scripts/gemm_lt_tiles.py [TABLE.json] [--max-m 128 | --max-n 128]

Session 22 read the skinny shapes this way: cuBLASLt runs one wave of 128 CTAs in 2-CTA clusters there, with
tiles 32-128 long on the long side.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def rows(table: dict, max_m: int | None = None, max_n: int | None = None) -> list[dict]:
    from cudaopt.gemm.configs import NUM_SMS_H200
    from cudaopt.gemm.lt_fallback import describe_lt_algo

    out = []
    for e in table["entries"]:
        info = (e.get("lt_fallback") or {}).get("algo_info")
        if not info or (max_m and e["m"] > max_m) or (max_n and e["n"] > max_n):
            continue
        d = describe_lt_algo(info)
        ctas = round(d["waves"] * NUM_SMS_H200) if d["waves"] else None  # (the table's GPU)
        out.append({"shape": f"{e['m']}x{e['n']}x{e['k']}", "backend": e["backend"], "ours": e["label"],
                    "lt_tile": "x".join(map(str, d["tile"])) if d["tile"] else "?",
                    "lt_cluster": "x".join(map(str, d["cluster"])) if d["cluster"] else "?",
                    "splitk": d["splitk"], "ctas": ctas})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("table", nargs="?", default=str(Path(__file__).resolve().parents[1] / "src/cudaopt/gemm/tuned_h200.json"))
    ap.add_argument("--max-m", type=int, default=None, help="only shapes with M at most this")
    ap.add_argument("--max-n", type=int, default=None, help="only shapes with N at most this")
    args = ap.parse_args()
    try:
        table = json.loads(Path(args.table).read_text())
    except (OSError, ValueError) as exc:
        sys.exit(f"{args.table}: not a readable tuned table ({exc}); give the JSON that `cudaopt tune-gemm` wrote")
    found = rows(table, args.max_m, args.max_n)
    print(f"{'shape':>18} {'backend':>9} {'cuBLASLt tile (rows x cols)':>28} {'cluster (M x N)':>16} {'splitK':>6} "
          f"{'CTAs':>5}  our kernel")
    for r in found:
        print(f"{r['shape']:>18} {r['backend']:>9} {r['lt_tile']:>28} {r['lt_cluster']:>16} {r['splitk']!s:>6} "
              f"{r['ctas']!s:>5}  {r['ours']}")
    print(f"{len(found)} entries with a recorded cuBLASLt algorithm")


if __name__ == "__main__":
    main()
