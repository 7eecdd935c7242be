"""Adopt a config into a tuned table where `benchmarks/gemm_configs.py --out` timed it faster than the
table's own choice (paired: both timed interleaved in the same rounds).

    python scripts/gemm_adopt.py TABLE.json SCREEN.jsonl --config 55 [--margin 1.03] --out NEW.json
    python scripts/gemm_adopt.py TABLE.json SCREEN.jsonl --config 68,69 --out NEW.json   # the faster of two

A shape's entry takes the config (with the split count the screen timed fastest; of several configs, the
fastest of them) where its output was
correct (relative error below 1e-2) and table_us / config_us >= margin. The entry's backend stays: a
shape the dispatcher hands to torch.matmul or cuBLASLt keeps that fallback (rerun the fallback pass to
revisit it); what changes is "ours", the kernel benchmarked as ours and dispatched where backend is
"ours". Each changed entry records the screen's figures under "adopted". The margin keeps a shape on
its tuned choice unless the gain is clear of the 1-3% a single screen reads run to run.

--rebackend (session 23): an adopted entry's backend is decided again from the same screen: "ours" where
torch.matmul's time over the config's reaches the table's fallback_below (the tuner's rule), else "torch";
its cuBLASLt record is dropped, so the fallback pass (`cudaopt tune-gemm-fallbacks`, which skips checked
shapes) times it against cuBLASLt's algorithms again. Without it a shape handed to torch.matmul or cuBLASLt
before never dispatches the faster kernel it adopted.

--confirm SCREEN2.jsonl (session 25): a second screen, run apart from the first; a shape is adopted only where the
(config, splits) the first screen picked also clears the margin there, correct. Session 25's large shapes read the
same kernel 841 us in a screen and 697 us minutes later: one screen's 3% does not repeat there.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from statistics import geometric_mean


def _ok(c: dict) -> bool:
    """A screened (config, splits) that ran and was correct (relative error below 1e-2)."""
    return c["err"] < 1e-2 and math.isfinite(c["us"]) and c["us"] > 0


def adopt(table: dict, screen: list[dict], config: int | list[int], margin: float,
          rebackend: bool = False, confirm: list[dict] | None = None) -> tuple[dict, list[tuple]]:
    """The new table (a copy) and the adopted shapes as (m, n, k, gain). `config`: one id, or several (each
    shape takes the fastest correct of them). rebackend, confirm: see the module's docstring."""
    from cudaopt.gemm.configs import Choice

    ids = {config} if isinstance(config, int) else set(config)
    rows = {(r["m"], r["n"], r["k"]): r for r in screen}
    second = {(r["m"], r["n"], r["k"]): r for r in confirm or []}
    new = json.loads(json.dumps(table))
    changed = []
    for e in new["entries"]:
        r = rows.get((e["m"], e["n"], e["k"]))
        # the fastest correct (config, splits) of these configs that the screen timed on the shape
        ok = [c for c in (r or {}).get("configs", {}).values()
              if c["config"] in ids and _ok(c)]
        if not ok:
            continue
        pick = min(ok, key=lambda c: c["us"])
        gain = r["table_us"] / pick["us"]
        if gain < margin:
            continue
        if confirm is not None:  # the same (config, splits), correct and past the margin in the second screen too
            r2 = second.get((e["m"], e["n"], e["k"])) or {}
            again = [c for c in r2.get("configs", {}).values()
                     if (c["config"], c["splits"]) == (pick["config"], pick["splits"]) and _ok(c)]
            gain2 = r2["table_us"] / again[0]["us"] if again else 0.0
            if gain2 < margin:
                continue
        e["adopted"] = {"from": e.get("label"), "table_us": round(r["table_us"], 3),
                        "config_us": round(pick["us"], 3), "lt_us": round(r["lt_us"], 3)}
        if confirm is not None:
            e["adopted"]["confirm_gain"] = round(gain2, 6)
        e["config"], e["splits"] = pick["config"], pick["splits"]
        e["label"] = Choice("ours", pick["config"], pick["splits"]).label()
        torch_us = r.get("torch_us", math.nan)
        if rebackend and math.isfinite(torch_us) and torch_us > 0:
            was = e.get("backend", "ours")
            e["backend"] = "ours" if torch_us / pick["us"] >= new.get("fallback_below", 1.0) else "torch"
            e.pop("lt_algo", None)
            e.pop("lt_fallback", None)  # unchecked: the fallback pass decides it against cuBLASLt again
            e["adopted"].update(torch_us=round(torch_us, 3), ratio_vs_torch=round(torch_us / pick["us"], 6),
                                backend_was=was)
        changed.append((e["m"], e["n"], e["k"], gain))
    return new, changed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("table")
    ap.add_argument("screen", help="JSON lines from benchmarks/gemm_configs.py --out")
    ap.add_argument("--config", nargs="+", required=True, help="config id(s), space- or comma-separated")
    ap.add_argument("--margin", type=float, default=1.03)
    ap.add_argument("--out", required=True)
    ap.add_argument("--confirm", default=None,
                    help="a second screen's JSON lines: adopt only where it clears the margin too")
    ap.add_argument("--rebackend", action="store_true",
                    help="decide an adopted shape's backend (ours or torch) from the screen and drop its cuBLASLt "
                         "record, for the fallback pass to check again")
    args = ap.parse_args()
    try:
        table = json.loads(Path(args.table).read_text())
        screen = [json.loads(line) for line in Path(args.screen).read_text().splitlines() if line.strip()]
        confirm = None if args.confirm is None else [
            json.loads(line) for line in Path(args.confirm).read_text().splitlines() if line.strip()]
        table["entries"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"gemm_adopt: cannot read {args.table} / {args.screen}{' / ' + args.confirm if args.confirm else ''} "
                 f"({e}); give a tuned table and the JSON lines gemm_configs.py --out wrote")
    from cudaopt.gemm.configs import KERNEL_CONFIGS

    tokens = [t for v in args.config for t in v.replace(",", " ").split()]
    bad = [t for t in tokens if not (t.isdigit() and int(t) < len(KERNEL_CONFIGS))]
    if bad or not tokens:
        sys.exit(f"gemm_adopt: --config {' '.join(bad or args.config)} is not a config id; give ids of "
                 f"0..{len(KERNEL_CONFIGS) - 1}")
    ids = [int(t) for t in tokens]
    new, changed = adopt(table, screen, ids, args.margin, rebackend=args.rebackend, confirm=confirm)
    Path(args.out).write_text(json.dumps(new, indent=1) + "\n")
    g = f", geomean gain {geometric_mean([c[3] for c in changed]):.3f}" if changed else ""
    print(f"adopted config {','.join(map(str, ids))} on {len(changed)} of {len(screen)} screened shapes "
          f"(margin {args.margin}{', confirmed by a second screen' if confirm is not None else ''}){g}")
    by = {(e["m"], e["n"], e["k"]): e for e in new["entries"]}
    for m, n, k, gain in changed:
        e = by[(m, n, k)]
        moved = (f", backend {e['adopted']['backend_was']} -> {e['backend']}"
                 if args.rebackend and "backend_was" in e["adopted"] else "")
        print(f"  {m}x{n}x{k}: {gain:.3f}x{moved}")


if __name__ == "__main__":
    main()
