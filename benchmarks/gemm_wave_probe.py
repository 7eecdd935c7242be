"""Does a partial last wave of tiles cost a whole wave? A probe for stream-K (issue 6, session 46).

On the H200's grid (session 45, run 8) 22 of the 37 shapes under the dispatcher's 0.98x floor are large shapes whose
kernel of record is one of our plain wgmma tiles, and 19 of those run a tile count just short of a whole number of
waves of 132 SMs (1024 tiles of 128 x 256 = 7.76 waves: 97.0% of the last wave's slots busy). If the last wave costs a
whole wave's time, balancing it (stream-K: the tail's K iterations spread over every SM) would lift 19 of the 22 over
0.98x (a model: ratio / wave efficiency, less 0.5% for the fixup). But the card runs these shapes at its power cap, where
idle SMs in a tail may hand their power to the busy ones, and the grid itself does not say which: cuBLASLt's lead over
ours does not follow our wave efficiency across shapes (slope -0.06 on log scales, 187 shapes from 1e11 FLOP).

This measures it directly. Per config: N and K fixed, M swept in whole tile rows so the tile count walks across wave
boundaries (by default 5.5 to 8.5 waves); every point of one config timed interleaved in one GPU timing run (CUDA
graphs, shuffled rounds, as bench-gemm), with torch.matmul at the same shapes. A fit t = a + b * tiles + c * waves
(waves = ceil(tiles / slots)) gives the quantized share q = c / (c + b * slots): the part of a wave's time paid in full
however few tiles it holds. q near 1: a partial wave costs a whole one and stream-K is worth building; q near 0: time
follows the tile count, and it is not.

    python benchmarks/gemm_wave_probe.py                      # configs 18, 42, 26, 25 at N ~ 8192, K = 4096
    python benchmarks/gemm_wave_probe.py --configs 42 --k 8192 --waves 3.5:5.5

Session 47 measured q = 0.88-0.98 on an H100 and wrote stream-K twins of the cooperative configs (hgemm_wgmma.cu's
sk_item): where a config has one (_lib.has_streamk), every point times it too (`sk us`, interleaved with the rest),
checks its output against torch.matmul's, and fits its q; `sk/ours` under 1 is what stream-K buys there.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import sys

# the one-CTA tiles the shipped H200 table runs most from 1e11 FLOP (128x192 ping-pong, 128x256 cooperative 3 and 4
# slots, 256x128 cooperative); cluster configs are left out (their slots are pairs, limited by the occupancy query)
DEFAULT_CONFIGS = (18, 42, 26, 25)


def sweep(bm: int, bn: int, n_target: int, waves: tuple[float, float], slots: int) -> tuple[int, list[int]]:
    """(N, [M...]): N the multiple of bn nearest n_target; each M a whole number of bm-row tiles whose tile count lies
    within `waves` (in units of `slots` tiles)."""
    tiles_n = max(1, round(n_target / bn))
    lo = math.ceil(waves[0] * slots / tiles_n)
    hi = math.floor(waves[1] * slots / tiles_n)
    return tiles_n * bn, [tm * bm for tm in range(max(lo, 1), hi + 1)]


def quantized_share(tiles: list[int], times: list[float], slots: int) -> dict:
    """Least squares t = a + b * tiles + c * ceil(tiles / slots) over one sweep. q = c / (c + b * slots): 1 when a
    partial wave costs a whole one, 0 when time follows the tile count; None when the sweep cannot tell (fewer than four
    timed points, all in one wave count, or a fit whose time per whole wave, c + b * slots, is not positive)."""
    import numpy as np

    t = np.asarray(times, dtype=float)
    x = np.asarray(tiles, dtype=float)
    w = np.ceil(x / slots)
    ok = np.isfinite(t)
    if ok.sum() < 4 or len(set(w[ok])) < 2:
        return {"q": None, "a": None, "b": None, "c": None, "rms": None}
    design = np.c_[np.ones(ok.sum()), x[ok], w[ok]]
    (a, b, c), *_ = np.linalg.lstsq(design, t[ok], rcond=None)
    rms = float(np.sqrt(np.mean((design @ np.array([a, b, c]) - t[ok]) ** 2)))
    whole = c + b * slots
    q = float(c / whole) if whole > 0 else None
    return {"q": q, "a": float(a), "b": float(b), "c": float(c), "rms": rms}


def probe_config(cid: int, n_target: int, k: int, waves: tuple[float, float], rounds: int, seed: int,
                 slots: int, streamk: bool = True) -> dict:
    import torch

    from cudaopt.gemm import _lib
    # (QUICK_REL_ERR: the wgmma comparison's bound on one input set, here each point's against torch.matmul's output)
    from cudaopt.gemm.bench import QUICK_REL_ERR, ShapeInputs, ours_launch, torch_launch
    from cudaopt.gemm.configs import KERNEL_CONFIGS
    from cudaopt.gemm.correctness import rel_error
    from cudaopt.gemm.dispatch import Choice
    from cudaopt.gemm.timing import time_gpu

    cfg = KERNEL_CONFIGS[cid]
    n, ms = sweep(cfg.bm, cfg.bn, n_target, waves, slots)
    choice = Choice("ours", cid, 1)
    if len(ms) < 4:
        return {"config": cid, "label": choice.label(), "skipped": f"{len(ms)} sweep points (tile rows of {cfg.bm} at "
                f"N = {n}); give a wider --waves"}
    torch.manual_seed(seed)
    # One B and one A of the largest M for the whole sweep (a point's A is its first M rows): two sets, rotated
    sets = 2
    a_full = [torch.randn((ms[-1], k), device="cuda", dtype=torch.float16) for _ in range(sets)]
    b = [torch.randn((k, n), device="cuda", dtype=torch.float16) for _ in range(sets)]
    c_full = [torch.empty((ms[-1], n), device="cuda", dtype=torch.float16) for _ in range(sets)]
    ws = torch.zeros(max(_lib.workspace_bytes(ms[-1], n, 1), 4) // 4, device="cuda", dtype=torch.float32)
    # the stream-K twin's workspace: one for the whole sweep (every call leaves its counters zero)
    sk_ws = _lib.new_streamk_workspace(cid) if streamk and _lib.has_streamk(cid) else None
    cands, points = {}, []
    for m in ms:
        x = ShapeInputs([t[:m] for t in a_full], b, [], [t[:m] for t in c_full], ws, None)
        cands[f"ours_{m}"] = ours_launch(x, m, n, k, choice)
        cands[f"torch_{m}"] = torch_launch(x)
        tiles = math.ceil(m / cfg.bm) * math.ceil(n / cfg.bn)
        # the point's output against torch.matmul's, input set 0 (a timing of wrong results is no timing)
        cands[f"ours_{m}"](0)
        got = x.c[0].float()
        cands[f"torch_{m}"](0)
        ref = x.c[0].float()
        err = rel_error(got, ref)
        point = {"m": m, "n": n, "k": k, "tiles": tiles, "waves": tiles / slots, "rel_err": err}
        if sk_ws is not None:
            cands[f"sk_{m}"] = streamk_launch(x, m, n, k, cid, sk_ws)
            x.c[0].zero_()
            cands[f"sk_{m}"](0)
            point["sk_rel_err"] = rel_error(x.c[0], ref)
        points.append(point)
    t = time_gpu(cands, sets, rounds=rounds, rng=random.Random(seed * 7919 + cid))
    for p in points:
        p["ours_us"], p["torch_us"] = t[f"ours_{p['m']}"], t[f"torch_{p['m']}"]
        if sk_ws is not None:
            p["sk_us"] = t[f"sk_{p['m']}"]
    fit = quantized_share([p["tiles"] for p in points], [p["ours_us"] for p in points], slots)
    fit_torch = quantized_share([p["tiles"] for p in points], [p["torch_us"] for p in points], slots)
    fit_sk = quantized_share([p["tiles"] for p in points], [p["sk_us"] for p in points], slots) if sk_ws is not None \
        else None
    counters_zero = None
    if sk_ws is not None:  # every call leaves the fixup counters as it found them
        torch.cuda.synchronize()
        counters_zero = bool((sk_ws[: cfg.consumers * slots].view(torch.int32) == 0).all().item())
    del a_full, b, c_full, ws, cands, sk_ws
    torch.cuda.empty_cache()
    correct = all(p["rel_err"] <= QUICK_REL_ERR and p.get("sk_rel_err", 0.0) <= QUICK_REL_ERR for p in points)
    return {"config": cid, "label": choice.label(), "bm": cfg.bm, "bn": cfg.bn, "slots": slots, "points": points,
            "fit": fit, "fit_torch_same_tiles": fit_torch, "fit_sk": fit_sk, "sk_counters_zero": counters_zero,
            "correct": correct and counters_zero is not False}


def streamk_launch(x, m: int, n: int, k: int, cid: int, ws):
    """One call of config cid's stream-K twin on input set i (x: bench.ShapeInputs)."""
    from cudaopt.gemm import _lib
    from cudaopt.gemm.bench import _stream

    nbytes = ws.numel() * ws.element_size()
    return lambda i: _lib.launch_ours_streamk(x.a[i].data_ptr(), x.b[i].data_ptr(), x.c[i].data_ptr(), m, n, k, cid,
                                              ws.data_ptr(), nbytes, _stream())


def _parse_waves(text: str) -> tuple[float, float]:
    lo, hi = (float(v) for v in text.split(":"))
    if not 0 < lo < hi:
        raise ValueError(f"--waves {text}: want LO:HI with 0 < LO < HI")
    return lo, hi


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", default=",".join(map(str, DEFAULT_CONFIGS)), help="comma list of one-CTA wgmma config ids")
    ap.add_argument("--n", type=int, default=8192, help="N, rounded to a whole number of the config's tile columns")
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--waves", default="5.5:8.5", help="LO:HI, the tile counts swept, in waves of SMs")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="one JSON line per config here")
    ap.add_argument("--no-streamk", action="store_true", help="leave out the stream-K twins (session 47)")
    args = ap.parse_args(argv)
    try:
        configs = [int(c) for c in args.configs.split(",") if c]
        waves = _parse_waves(args.waves)
        if args.k % 8 or args.n % 8 or args.k <= 0 or args.n <= 0:
            raise ValueError("--n and --k must be positive multiples of 8")
    except ValueError as e:
        print(f"gemm_wave_probe: {e}; e.g. --configs 42 --n 8192 --k 4096 --waves 5.5:8.5", file=sys.stderr)
        return 2
    from cudaopt.gemm.configs import KERNEL_CONFIGS

    bad = [c for c in configs if not 0 <= c < len(KERNEL_CONFIGS) or KERNEL_CONFIGS[c].kind != "wgmma"
           or KERNEL_CONFIGS[c].cluster_m != 1]
    if bad:
        print(f"gemm_wave_probe: configs {bad} are not one-CTA wgmma configs; e.g. --configs 42", file=sys.stderr)
        return 2
    import torch

    if not torch.cuda.is_available():
        print("gemm_wave_probe: needs a CUDA GPU", file=sys.stderr)
        return 2
    slots = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name()}, {slots} SMs; K = {args.k}; waves {waves[0]}-{waves[1]}")
    out = open(args.out, "w") if args.out else None
    for cid in configs:
        r = probe_config(cid, args.n, args.k, waves, args.rounds, args.seed, slots, streamk=not args.no_streamk)
        if out:
            out.write(json.dumps(r) + "\n")
            out.flush()
        if "skipped" in r:
            print(f"\nconfig {cid} ({r['label']}): skipped, {r['skipped']}")
            continue
        print(f"\nconfig {cid} ({r['label']}), N = {r['points'][0]['n']}: correct {r['correct']}")
        sk = r["fit_sk"] is not None
        print(f"{'M':>6} {'tiles':>6} {'waves':>6} {'ours us':>9} {'us/tile':>8} {'torch us':>9}"
              + (f" {'sk us':>9} {'sk/ours':>8} {'sk/torch':>8}" if sk else ""))
        for p in r["points"]:
            print(f"{p['m']:>6} {p['tiles']:>6} {p['waves']:>6.2f} {p['ours_us']:>9.1f} "
                  f"{p['ours_us'] / p['tiles']:>8.4f} {p['torch_us']:>9.1f}"
                  + (f" {p['sk_us']:>9.1f} {p['sk_us'] / p['ours_us']:>8.3f} {p['sk_us'] / p['torch_us']:>8.3f}"
                     if sk else ""))
        f, ft = r["fit"], r["fit_torch_same_tiles"]
        fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
        print(f"quantized share q (ours) {fmt(f['q'])}, fit rms {fmt(f['rms'])} us; "
              f"torch.matmul at the same shapes, counted in our tiles: q {fmt(ft['q'])}")
        if sk:
            ratios = [p["sk_us"] / p["ours_us"] for p in r["points"]]
            geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
            print(f"stream-K twin: q {fmt(r['fit_sk']['q'])}; sk/ours geomean {geo:.3f} (min {min(ratios):.3f}, max "
                  f"{max(ratios):.3f}); counters left zero {r['sk_counters_zero']}")
    if out:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
