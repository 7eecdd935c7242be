"""Throughput of the evaluation service: the seed corpus sent through HTTP, all at once.

Reports evaluations per minute and per device-minute, for each pass (the first pays for compiling; the
evaluator caches builds, so later passes show the steady state), and with --scaling for 1..N devices.

    python benchmarks/service_throughput.py --devices cuda:0,cuda:1 --scaling     # on a 2-GPU machine
    python benchmarks/service_throughput.py --devices 'cpu*2' --size small          # CPU candidates
    python benchmarks/service_throughput.py --fake -n 200 --devices 'cpu*4'         # the harness alone
    python benchmarks/service_throughput.py --url http://gpu-box:8000 --api-key K   # a running service

Nothing here is asserted; record what it prints in docs/gpu-runs.md.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import statistics
import sys
import time
from pathlib import Path

from cudaopt.pool.procs import stray_processes
from cudaopt.pool.snippet import MISBEHAVING, load_mix, snippet_evaluate
from cudaopt.service import BackgroundServer, create_app
from cudaopt.service.load import send_all
from cudaopt.service.server import make_pool, resolve_devices
from cudaopt.tasks.loader import CORPUS_DIR

HEADER = re.compile(r"#\s*cudaopt-corpus:\s*kind=(\S+)\s+device=(\S+)")
FAKE_REFERENCE = "import torch\nclass Model(torch.nn.Module):\n    pass\ndef get_inputs(): return []\ndef get_init_inputs(): return []\n"


def corpus_requests(device_kind: str, options: dict) -> list[dict]:
    """One request per corpus candidate written for `device_kind` ("cuda" or "cpu")."""
    requests = []
    for path in sorted(CORPUS_DIR.glob("*/*.py")):
        m = HEADER.search(path.read_text().splitlines()[0] if path.read_text() else "")
        if m and m.group(2) == device_kind:
            requests.append({"task": path.parent.name, "candidate": path.read_text(), "options": options})
    return requests


def fake_requests(n: int, options: dict) -> list[dict]:
    return [{"reference": FAKE_REFERENCE, "candidate": MISBEHAVING[k], "options": options} for k in load_mix(n)]


def run_pass(url: str, requests: list[dict], n_devices: int, api_key: str | None) -> dict:
    t0 = time.monotonic()
    results, health = send_all(url, requests, api_key=api_key, health_checks=1)
    wall = time.monotonic() - t0
    return {
        "evaluations": len(results),
        "devices": n_devices,
        "wall_s": round(wall, 2),
        "per_minute": round(len(results) / wall * 60, 1),
        "per_device_minute": round(len(results) / wall * 60 / n_devices, 1),
        "statuses": dict(collections.Counter(r["status"] for r in results)),
        "median_eval_s": round(statistics.median(r["seconds"] for r in results), 2) if results else None,
        "compile_cached": sum(bool(r.get("compile_cached")) for r in results),
        "health_during_load": health,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", help="a running service (otherwise one is started here)")
    ap.add_argument("--api-key")
    ap.add_argument("--devices", default=None, help="cpu, cpu*N, cuda, cuda:0,cuda:1 (default: every GPU, else cpu)")
    ap.add_argument("--pool", default="local", choices=["local", "ray"])
    ap.add_argument("--ray-address")
    ap.add_argument("--scaling", action="store_true", help="measure with 1, 2, ... N of the devices")
    ap.add_argument("--fake", action="store_true", help="misbehaving snippets instead of the corpus (no evaluator)")
    ap.add_argument("-n", type=int, default=200, help="evaluations per pass with --fake")
    ap.add_argument("--repeat", type=int, default=1, help="send the corpus this many times per pass")
    ap.add_argument("--limit", type=int, default=0, help="only this many corpus candidates, one task after another (0: all)")
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--size", default="full", choices=["full", "small"])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--budget", type=float, default=2.0, help="timing budget per evaluation, seconds")
    ap.add_argument("--prebuild", action="store_true",
                    help="compile the candidates first, in parallel on every core (passes then show cached builds)")
    ap.add_argument("--warmup-slots", type=int, default=0,
                    help="first fill the compile cache with this many slots per device (correctness only, not measured)")
    ap.add_argument("--json", type=Path, help="write the measurements here too")
    args = ap.parse_args()

    if args.fake:
        requests = fake_requests(args.n, {"exec_floor_s": 1.0})
    else:
        options = {"size": args.size, "trials": args.trials, "budget_s": args.budget}
        kind = "cpu" if (args.devices or "").startswith("cpu") else "cuda"
        requests = corpus_requests(kind, options)
        if args.limit:
            # round-robin over tasks, so a short run still mixes tasks (and sizes) rather than one task's files
            by_task = collections.defaultdict(list)
            for r in requests:
                by_task[r["task"]].append(r)
            mixed, queues = [], list(by_task.values())
            while queues and len(mixed) < args.limit:
                for q in list(queues):
                    if len(mixed) < args.limit and q:
                        mixed.append(q.pop(0))
                    if not q:
                        queues.remove(q)
            requests = mixed
        requests = requests * args.repeat
        if not requests:
            print(f"no corpus candidates for device={kind} under {CORPUS_DIR}", file=sys.stderr)
            return 1

    if args.prebuild and not args.fake:
        from cudaopt.evaluate.prebuild import prebuild

        t0 = time.perf_counter()
        built = prebuild([r["candidate"] for r in requests])
        print(json.dumps({"prebuild": len(built), "ok": sum(b.ok for b in built), "wall_s": round(time.perf_counter() - t0, 1)}), flush=True)
    runs = []
    if args.url:
        n_devices = len(resolve_devices(args.devices)) if args.devices else 1
        for p in range(args.passes):
            runs.append({"pass": p + 1, **run_pass(args.url, requests, n_devices, args.api_key)})
            print(json.dumps(runs[-1]))
    else:
        devices = resolve_devices(args.devices)
        if args.warmup_slots and not args.fake:
            warm = [{**r, "options": {**r["options"], "timing": False, "trials": 2}} for r in requests]
            pool = make_pool(args.pool, devices * args.warmup_slots, args.ray_address)
            try:
                with BackgroundServer(create_app(pool)) as url:
                    runs.append({"pass": "warmup", **run_pass(url, warm, pool.size, None)})
                    print(json.dumps(runs[-1]), flush=True)
            finally:
                pool.close()
        # Most devices first: a run cut short still has the figure that matters most.
        counts = range(len(devices), 0, -1) if args.scaling else [len(devices)]
        for k in counts:
            pool = make_pool(args.pool, devices[:k], args.ray_address, snippet_evaluate if args.fake else None)
            try:
                with BackgroundServer(create_app(pool)) as url:
                    for p in range(args.passes):
                        runs.append({"pass": p + 1, "device_list": devices[:k],
                                     **run_pass(url, requests, pool.size, None)})
                        print(json.dumps(runs[-1]), flush=True)
            finally:
                pool.close()
        print(json.dumps({"stray_processes_after": [p.cmdline[:80] for p in stray_processes()]}))
    if args.json:
        args.json.write_text(json.dumps(runs, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
