"""Print compact tables of the JSON files a GPU check left in a folder (A/A, corpus)."""

import json
import sys
from pathlib import Path

from corpus_table import corpus_summary  # scripts/ is on the path when this runs as a script

out = Path(sys.argv[1] if len(sys.argv) > 1 else "runs")
if (out / "aa.json").exists():
    aa = json.loads((out / "aa.json").read_text())
    exact = [r for r in aa if r["speedup"] == 1.0]
    print(f"A/A: {len(exact)}/{len(aa)} tasks report 1.00 ({100 * len(exact) / max(1, len(aa)):.0f}%)")
    for r in aa:
        if r["speedup"] != 1.0:
            print(f"  off: {r['task']} {r['status']} raw={r['raw']} ci={r['ci']} {r['message'][:80]}")
if (out / "corpus.json").exists():
    rows = json.loads((out / "corpus.json").read_text())
    for r in rows:
        t = r["timing"] or {}
        sp = f"{r['speedup']:.2f}" if r["speedup"] is not None else "-"
        ci = f"[{t['ci_low']:.2f},{t['ci_high']:.2f}]" if t else ""
        cats = ",".join(sorted({f["category"] for f in r["findings"]}))
        why = r["message"][:50] if r["status"] != "ok" else ""
        print(f"{r['task'][:21]:21} {r['candidate'][:24]:24} {r['kind']:6} {r['status']:13} {sp:>5} {ci:13} {cats[:30]:30} {why}")
    print(corpus_summary(rows))
