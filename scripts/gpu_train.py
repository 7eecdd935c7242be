"""The training stages on a GPU, small: what a GRPO step costs and where its time goes.

    python scripts/gpu_train.py --out runs/train_gpu [--tasks 3] [--sft-epochs 150] [--steps 6] [--group-size 4]
        [--temperature 0.2]

1. A database seeded with the seed corpus's correct CUDA candidates of the N tasks whose answers are
   shortest. Their speedups there are placeholders by kind (fast 2.0, honest 1.2, slow 0.5): they only
   steer prompt sampling; every GRPO completion is evaluated for real.
2. A tiny GPT-2 (character tokenizer, built here: nothing is downloaded) fine-tuned by `train_sft` on the
   export until it writes parseable answers (session 6: 30 epochs left the loss at 1.9 per character and
   all 24 GRPO completions unparseable, so no evaluation reached the GPU). A byte-level BPE tokenizer
   trained here on the export (~3x fewer tokens). Session 7 (lr 3e-3 constant-ish, no warmup, GPT-2's
   0.1 dropout) still ended at loss ~1.6 and 24 of 24 parse errors; now dropout 0, lr 1e-3 with 5% warmup
   and cosine decay, no weight decay. Then a sampling check: greedy and `--check-samples` samples per task
   at the GRPO temperature, parsed by the repo's parser (`parse_response`).
3. `train_grpo` for a few steps on those tasks, rewards from the real evaluator on the GPU (dropout off in
   the policy: TRL's default left it on, and the reported KL against the dropout-free reference read 1e18+).
Prints, last: per-step seconds, generation / evaluation (its nvcc builds apart) / update+rest seconds, TRL's
kl and loss, peak GPU memory, and the completions' statuses; `--summarize-only` prints that table for a
run that was cut short (the step log is written as it goes). Nothing is asserted; record what it prints in docs/gpu-runs.md.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import time
from pathlib import Path

PLACEHOLDER_SPEEDUP = {"fast": 2.0, "honest": 1.2, "slow": 0.5}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/train_gpu")
    ap.add_argument("--tasks", type=int, default=3)
    ap.add_argument("--sft-epochs", type=int, default=150)
    ap.add_argument("--sft-lr", type=float, default=1e-3)
    ap.add_argument("--check-samples", type=int, default=2, help="samples per task at --temperature after SFT")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=384)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--temperature", type=float, default=0.2, help="GRPO's sampling temperature")
    ap.add_argument("--tokenizer", choices=("bpe", "char"), default="bpe")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--summarize-only", action="store_true", help="print the closing table of a run in --out (e.g. one cut short)")
    args = ap.parse_args()
    if args.summarize_only:
        summarize(Path(args.out))
        return

    from cudaopt.db.store import CandidateRecord, ExemplarDB
    from cudaopt.evaluate.result import EvalOptions
    from cudaopt.tasks.seed_corpus import corpus_entries
    from cudaopt.train import export_sft, train_grpo, train_sft
    from cudaopt.train.data import answer_with_sections
    from cudaopt.train.tiny import bpe_tokenizer, char_tokenizer, save_tiny

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    templates = out / "templates"  # short prompts: a character-level tiny model reads every character
    templates.mkdir(exist_ok=True)
    (templates / "oneshot.txt").write_text("Task $task_name\n")
    (templates / "contrastive.txt").write_text("Task $task_name after $n_exemplars\n")
    (templates / "exemplar.txt").write_text("#$id ${speedup}x\n")

    correct = [e for e in corpus_entries() if e.device == "cuda" and e.expected_correct]
    by_task: dict[str, list] = collections.defaultdict(list)
    for e in correct:
        by_task[e.task].append(e)
    chosen = sorted(by_task, key=lambda t: min(len(e.source) for e in by_task[t]))[: args.tasks]
    db_url = out / "db.sqlite"
    tasks = []
    with ExemplarDB(db_url) as db:
        run = db.start_run("corpus-seed")
        for name in chosen:
            task = by_task[name][0].reference()
            tasks.append(task)
            tid = db.ensure_task(task)
            for e in by_task[name]:
                db.add_candidate(CandidateRecord(task_id=tid, run_id=run.id, source=e.source, status="ok",
                                                 response=answer_with_sections(e.source), origin="corpus",
                                                 speedup=PLACEHOLDER_SPEEDUP.get(e.kind, 1.0)))
    longest = max(len(e.source) for t in chosen for e in by_task[t])
    print(f"tasks: {chosen}; longest answer {longest} characters", flush=True)

    t0 = time.perf_counter()
    data = export_sft(db_url, out / "sft.jsonl", template_dir=templates)
    pairs = [json.loads(line) for line in Path(data).read_text().splitlines() if line.strip()]
    tok = bpe_tokenizer([p["prompt"] + p["completion"] for p in pairs]) if args.tokenizer == "bpe" else char_tokenizer()
    longest = max(len(tok(p["prompt"] + p["completion"])["input_ids"]) for p in pairs)  # in tokens from here on
    print(f"{args.tokenizer} tokenizer: longest pair {longest} tokens", flush=True)
    base = save_tiny(out / "tiny", tokenizer=tok, hidden=args.hidden, layers=args.layers, heads=4, max_positions=longest + 512)
    # max_length above the longest pair: no answer is truncated. Warmup then cosine decay; no weight decay.
    sft = train_sft(base, data, out / "sft", epochs=args.sft_epochs, learning_rate=args.sft_lr, batch_size=1, grad_accum=1,
                    max_length=longest + 512, save_steps=10_000,
                    overrides={"warmup_steps": 0.05, "lr_scheduler_type": "cosine", "weight_decay": 0.0})
    sft_s = time.perf_counter() - t0
    print(f"sft: {sft_s:.0f} s, mean train loss {sft.train_loss:.3f}, last logged loss {sft.final_loss}, "
          f"token accuracy {sft.final_token_accuracy} -> {sft.model_dir}", flush=True)
    check = sample_check(sft.model_dir, pairs, args.device, longest + 256, args.temperature, args.check_samples)

    t0 = time.perf_counter()
    options = EvalOptions(device=args.device, trials=10, budget_s=0.5)
    train_grpo(sft.model_dir, tasks, out / "grpo", db_url=db_url, steps=args.steps, group_size=args.group_size,
               max_completion_length=longest + 256, learning_rate=1e-5, options=options, template_dir=templates,
               save_steps=10_000, final_eval_samples=1, temperature=args.temperature)
    grpo_s = time.perf_counter() - t0

    summarize(out, {"tasks": chosen, "sft_seconds": sft_s, "sft_train_loss": sft.train_loss, "sft_final_loss": sft.final_loss,
                    "sample_check": check, "grpo_seconds": grpo_s, "args": vars(args)})


def summarize(out: Path, extra: dict | None = None) -> None:
    """The closing table from what the run left in `out` (also after it was cut short: the step log is
    written a line per step). Writes summary.json beside it."""
    from cudaopt.db.store import ExemplarDB

    if extra is None:  # --summarize-only: keep what the run itself wrote (SFT seconds, arguments, sample check)
        prev = out / "summary.json"
        keep = json.loads(prev.read_text()) if prev.exists() else {}
        extra = {k: v for k, v in keep.items() if k not in ("steps", "statuses", "kl", "losses")}

    def lines(name: str) -> list[dict]:
        p = out / "grpo" / name
        return [json.loads(x) for x in p.read_text().splitlines() if x.strip()] if p.exists() else []

    steps, rewards, logs = lines("grpo_steps.jsonl"), lines("grpo_rewards.jsonl"), lines("grpo_log.jsonl")
    statuses: collections.Counter = collections.Counter()
    if (out / "db.sqlite").exists():
        with ExemplarDB(out / "db.sqlite") as db:
            statuses = collections.Counter(c.status for c in db.candidates() if c.origin == "grpo")
    print("\nstep  seconds  generation s  eval s (builds)  update+rest s  peak GPU GiB")
    for s in steps:
        mem = s["peak_memory_bytes"] / 2**30 if s["peak_memory_bytes"] else 0.0
        gen = s.get("generation_seconds") or 0.0
        print(f"{s['step']:4d} {s['seconds']:8.1f} {gen:13.1f} {s['eval_seconds']:7.1f} ({s.get('build_seconds') or 0.0:5.1f}) "
              f"{s['seconds'] - gen - s['eval_seconds']:14.1f} {mem:13.2f}")
    if steps:
        tot = sum(s["seconds"] for s in steps)
        ev = sum(s["eval_seconds"] for s in steps)
        build = sum(s.get("build_seconds") or 0.0 for s in steps)
        gen = sum(s.get("generation_seconds") or 0.0 for s in steps)
        peak = max((s["peak_memory_bytes"] or 0) for s in steps) / 2**30
        print(f"median step {statistics.median(s['seconds'] for s in steps):.1f} s; shares: generation {100 * gen / tot:.0f}%, "
              f"evaluation {100 * ev / tot:.0f}% (its builds {100 * build / tot:.0f}% of step time), update and the rest "
              f"{100 * (tot - gen - ev) / tot:.0f}%; peak GPU memory {peak:.2f} GiB"
              + (f"; sft {extra['sft_seconds']:.0f} s; grpo total {extra['grpo_seconds']:.0f} s" if "grpo_seconds" in extra else ""))
    raw = [r.get("raw") for r in rewards if r.get("raw") is not None]
    kls = [entry["kl"] for entry in logs if "kl" in entry]
    losses = [entry["loss"] for entry in logs if "loss" in entry]
    if kls:
        print(f"TRL kl per step {[f'{k:.3g}' for k in kls]}; loss {[f'{x:.3g}' for x in losses]}")
    print(f"completions: {sum(statuses.values())} stored, statuses {dict(statuses)}; "
          f"mean raw reward {statistics.fmean(raw) if raw else float('nan'):.3f} over {len(raw)}")
    (out / "summary.json").write_text(json.dumps({**extra, "steps": steps, "statuses": dict(statuses), "kl": kls,
                                                  "losses": losses}, indent=1))


def sample_check(model_dir, pairs, device, max_new_tokens, temperature, n):
    """Greedy and n samples at `temperature` (top_p 1, as GRPO samples) per task prompt, parsed by the repo's
    parser. Returns {"greedy": {status: count}, "sampled": {...}}; prints it."""
    from cudaopt.llm.transformers_local import TransformersLLM
    from cudaopt.prompts.parser import parse_response
    from cudaopt.train.modeling import load_model, load_tokenizer

    prompts = list(dict.fromkeys(p["prompt"] for p in pairs))
    answers = {p["completion"].strip() for p in pairs}
    llm = TransformersLLM(load_model(model_dir), load_tokenizer(model_dir), device=device, max_new_tokens=max_new_tokens,
                          top_p=1.0, batch_size=8)
    t0 = time.perf_counter()
    result = {}
    for name, temp, k in (("greedy", 0.0, 1), (f"t={temperature}", temperature, n)):
        if k <= 0:
            continue
        texts = [c.text for c in llm.generate([p for p in prompts for _ in range(k)], temperature=temp)]
        parsed = [parse_response(t) for t in texts]
        counts = collections.Counter("parses" if r.ok else r.reason.split(":")[0] for r in parsed)
        exact = sum(t.strip() in answers for t in texts)
        result[name] = {"samples": len(texts), "parse": sum(r.ok for r in parsed), "exact_copy": exact, "statuses": dict(counts)}
    print(f"sample check ({time.perf_counter() - t0:.0f} s): {result}", flush=True)
    return result


if __name__ == "__main__":
    main()
