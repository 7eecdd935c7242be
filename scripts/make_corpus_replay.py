"""Write a replay file (JSONL) whose answers are the seed corpus's CUDA candidates, for `--llm replay:FILE`.

    python scripts/make_corpus_replay.py runs/corpus_replay.jsonl [--device cuda]

Each corpus candidate becomes one recorded answer for its task, in the answer format the prompts ask
for (analysis, design, code), so a suite search can be run with the built-in proposers plus these
answers on a machine with no model. Answers are the corpus files as they are: honest, slow and wrong
ones included, which is what a model's answers look like.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from cudaopt.tasks.seed_corpus import corpus_entries


def answer(note: str, kind: str, source: str) -> str:
    return (f"## Performance Analysis\nA {kind} hand-written kernel from the seed corpus.\n\n"
            f"## Algorithm Design\n{note or 'See the code.'}\n\n"
            f"## Code Implementation\n```python\n{source.rstrip()}\n```\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    args = ap.parse_args()
    rows = [{"task": e.task, "response": answer(e.note, e.kind, e.source), "model": f"seed-corpus/{e.name}"}
            for e in corpus_entries() if e.device == args.device]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"{len(rows)} answers for {len({r['task'] for r in rows})} tasks -> {args.out}")


if __name__ == "__main__":
    main()
