"""The corpus run of a GPU call as a markdown table for docs/gpu-runs.md, beside an earlier run's figures.

    python scripts/corpus_table.py CORPUS_JSON [--before docs/data/corpus_h200_session3.json] [--save PATH]

CORPUS_JSON is what scripts/eval_corpus.py wrote. --save keeps the compact rows (task, candidate, kind,
status, speedup, interval, times) as a small JSON beside the docs, so a later run can be set against it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def compact(r: dict) -> dict:
    t = r.get("timing") or {}
    return {"task": r["task"], "candidate": r["candidate"], "kind": r["kind"], "status": r["status"],
            "speedup": r["speedup"], "ci": [t["ci_low"], t["ci_high"]] if t else None,
            "ref_us": t.get("ref_time_us"), "cand_us": t.get("cand_time_us"), "eval_s": r.get("seconds"),
            "findings": sorted({f["category"] for f in r.get("findings", [])}), "device_name": r.get("device_name")}


def corpus_summary(raw: list[dict]) -> str:
    """One line over eval_corpus.py's rows: how many came out as labelled."""
    honest = [r for r in raw if r["expected_correct"]]
    wrong = [r for r in raw if not r["expected_correct"]]
    faster = {r["task"] for r in raw if r["status"] == "ok" and r["timing"] and r["timing"]["ci_low"] > 1.0}
    return (f"corpus: {len(raw)} evaluated; honest ok {sum(r['status'] == 'ok' for r in honest)}/{len(honest)}, "
            f"with no finding {sum(r['status'] == 'ok' and not r['findings'] for r in honest)}; "
            f"wrong caught {sum(r['status'] != 'ok' for r in wrong)}/{len(wrong)}; "
            f"tasks with a faster candidate (CI above 1): {len(faster)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus_json")
    ap.add_argument("--before", default="docs/data/corpus_h200_session3.json")
    ap.add_argument("--save", default=None)
    args = ap.parse_args()
    rows = [compact(r) for r in json.loads(Path(args.corpus_json).read_text())]
    before = {}
    if args.before and Path(args.before).exists():
        before = {(r["task"], r["candidate"]): r for r in json.loads(Path(args.before).read_text())}
    print("| task | candidate | kind | status | speedup [95% CI] | ref us | cand us | eval s | findings | before |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        sp = f"{r['speedup']:.2f} [{r['ci'][0]:.2f}, {r['ci'][1]:.2f}]" if r["speedup"] is not None and r["ci"] else "-"
        b = before.get((r["task"], r["candidate"]))
        bs = "-" if b is None else (f"{b['speedup']:.2f}" if b.get("speedup") is not None else b.get("status", "-"))
        us = lambda v: f"{v:.1f}" if v else "-"  # noqa: E731
        print(f"| {r['task']} | {r['candidate']} | {r['kind']} | {r['status']} | {sp} | {us(r['ref_us'])} | {us(r['cand_us'])} | "
              f"{r['eval_s']:.1f} | {', '.join(r['findings']) or '-'} | {bs} |")
    print("\n" + corpus_summary(json.loads(Path(args.corpus_json).read_text())))
    if args.save:
        Path(args.save).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
