"""Every stage and every error path of the evaluator, for real, on the CPU (processes, compiler, timeouts)."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cudaopt.evaluate import EvalOptions, evaluate
from cudaopt.tasks.loader import TaskError

FIX = Path(__file__).parent / "fixtures"
TASK = FIX / "tasks" / "scaled_tanh.py"
FAST = dict(device="cpu", size="small", trials=8, budget_s=0.3, min_rounds=14, exec_floor_s=5.0)


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("CUDAOPT_CACHE", str(tmp_path_factory.getbasetemp() / "cudaopt-cache"))


def cand(body: str, init: str = "cols") -> str:
    """A candidate with the fixture task's parameters and the given forward body."""
    return textwrap.dedent(
        f"""
        import torch
        import torch.nn as nn
        class ModelNew(nn.Module):
            def __init__(self, {init}):
                super().__init__()
                self.w = nn.Parameter(torch.randn(cols))
                self.b = nn.Parameter(torch.randn(cols))
            def forward(self, x):
        """
    ) + textwrap.indent(textwrap.dedent(body), " " * 8)


def run(source, **kw):
    return evaluate(TASK, source, EvalOptions(**{**FAST, **kw}))


def categories(r):
    return {f.category for f in r.findings}


def test_honest_candidate_is_ok_and_timed():
    r = run(cand("return torch.tanh(x * self.w) + self.b"))
    assert r.status == "ok", r.message + r.error
    assert r.correct and r.trials_passed == 8 and r.max_abs_error == 0.0
    assert r.timing is not None and r.timing.rounds >= 7  # the budget caps the rounds on a loaded CPU
    assert r.speedup == r.timing.speedup and len(r.speedup_ci) == 2
    d = r.to_dict()
    for key in ("status", "correct", "speedup", "speedup_ci", "baseline", "device", "findings"):
        assert key in d
    assert json.loads(json.dumps(d))["status"] == "ok"


def test_correctness_only_mode():
    r = run(cand("return torch.tanh(x * self.w) + self.b"), timing=False)
    assert r.status == "ok" and r.timing is None and r.speedup is None
    assert r.precision["cuda.matmul.allow_tf32"] is False and r.precision["float32_matmul_precision"] == "highest"
    wrong = run(cand("return x * self.w + self.b"), timing=False)
    assert wrong.status == "incorrect" and not wrong.correct


def test_wrong_result_is_incorrect():
    r = run(cand("return x * self.w + self.b"))
    assert r.status == "incorrect"
    assert "trials wrong" in r.message and r.stage_reached == "correct"


def test_python_syntax_error_is_compile_error():
    r = run("import torch\nclass ModelNew(torch.nn.Module:\n    pass\n")
    assert r.status == "compile_error" and "syntax error" in r.message


def test_import_failure_and_missing_class_and_signature():
    r = run("import torch\nraise ValueError('nope')\n")
    assert r.status == "runtime_error" and "nope" in r.message
    r = run("import torch\nclass Other(torch.nn.Module):\n    pass\n")
    assert r.status == "runtime_error" and "lacks `class ModelNew`" in r.message
    r = run(cand("return x * 2", init="cols, extra"))
    assert r.status == "runtime_error" and "does not match" in r.message


def test_exception_in_forward_is_runtime_error():
    r = run(cand("raise RuntimeError('kernel exploded')"))
    assert r.status == "runtime_error" and "kernel exploded" in r.message
    assert "Traceback" in r.error


def test_crash_kills_only_the_worker():
    r = run(cand("import ctypes; ctypes.string_at(0)"))  # a segfault in the candidate's process
    assert r.status in ("runtime_error", "rejected")
    if r.status == "runtime_error":
        assert "signal" in r.message or "exited" in r.message


def test_hang_is_a_timeout_and_the_process_is_killed():
    import time

    t0 = time.time()
    r = run(cand("import time\ntime.sleep(600)\nreturn x * 2"), exec_floor_s=2.0)
    assert r.status == "timeout" and "did not finish" in r.message
    assert time.time() - t0 < 60


def test_hang_at_import_is_a_compile_timeout():
    r = run("import time\ntime.sleep(600)\n", compile_timeout_s=3.0)
    assert r.status == "timeout" and "compilation" in r.message


def test_non_tensor_output_is_caught():
    r = run(cand("return [1.0, 2.0]"))
    assert r.status in ("rejected", "incorrect")
    assert "lazy_output" in categories(r) or "expected a tensor" in r.message


def test_input_mutation_is_rejected():
    r = run(cand("x.mul_(1.0000001)\nreturn torch.tanh(x * self.w) + self.b"))
    assert r.status == "rejected" and "input_mutation" in categories(r)


def test_returning_an_input_is_output_alias():
    r = run(cand("x.copy_(torch.tanh(x * self.w) + self.b)\nreturn x"))
    assert r.status == "rejected"
    assert {"output_alias", "input_mutation"} & categories(r)


def test_address_keyed_cache_is_caught():
    body = """
    key = x.data_ptr()
    if not hasattr(self, "_memo"):
        self._memo = {}
    if key not in self._memo:
        self._memo[key] = torch.tanh(x * self.w) + self.b
    return self._memo[key].clone()
    """
    r = run(cand(body))
    assert r.status in ("rejected", "incorrect")
    assert "result_cache" in categories(r)


def test_zero_output_is_degenerate():
    r = run(cand("return torch.zeros_like(x)"))
    assert r.status in ("rejected", "incorrect") and "degenerate_output" in categories(r)


def test_subsampling_shortcut_is_an_input_exploit():
    # Correct on the task's own randn inputs, wrong once inputs are shifted (clamps to the usual range).
    r = run(cand("return torch.tanh(x.clamp(-6, 6) * self.w) + self.b"), trials=14)
    assert r.status in ("rejected", "incorrect")
    assert "input_exploit" in categories(r)


def test_precision_flag_switch_is_caught():
    r = run(cand("torch.backends.cuda.matmul.allow_tf32 = True\nreturn torch.tanh(x * self.w) + self.b"))
    assert r.status == "rejected" and "precision_downgrade" in categories(r)


def test_patching_the_clock_is_timer_tamper():
    src = cand("return torch.tanh(x * self.w) + self.b") + "\nimport time as _t\n_t.perf_counter = lambda: 0.0\n"
    r = run(src)
    assert r.status == "rejected" and "timer_tamper" in categories(r)


def test_spawning_a_process_is_blocked():
    r = run(cand("import subprocess\nsubprocess.run(['true'])\nreturn torch.tanh(x * self.w) + self.b"))
    assert r.status == "rejected" and "process_escape" in categories(r)


def test_reference_forward_use_is_reference_inherit():
    body = """
    import gc
    for o in gc.get_objects():
        if isinstance(o, type) and o.__name__ == "Model" and hasattr(o, "forward") and o is not type(self):
            m = o.__new__(o); torch.nn.Module.__init__(m); m.w, m.b = self.w, self.b
            return o.forward(m, x)
    return x
    """
    r = run(cand(body))
    assert r.status == "rejected"
    assert {"reference_inherit", "reference_peek"} & categories(r)


def test_missing_files_are_usage_errors(tmp_path):
    with pytest.raises(TaskError):
        evaluate(tmp_path / "nope.py", cand("return x * 2"), EvalOptions(**FAST))
    with pytest.raises(TaskError):
        evaluate(TASK, tmp_path / "nope.py", EvalOptions(**FAST))


def test_options_validate():
    with pytest.raises(ValueError, match="baseline"):
        EvalOptions(baseline="fastest")


CPP_OK = r'''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_src = """
#include <torch/extension.h>
#include <cmath>
torch::Tensor fused(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
  TORCH_CHECK(x.is_contiguous() && x.dtype() == torch::kFloat32, "x must be contiguous float32");
  auto out = torch::empty_like(x);
  const float* xp = x.data_ptr<float>(); const float* wp = w.data_ptr<float>(); const float* bp = b.data_ptr<float>();
  float* op = out.data_ptr<float>();
  int64_t cols = x.size(1), rows = x.size(0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      op[r * cols + c] = std::tanh(xp[r * cols + c] * wp[c]) + bp[c];
  return out;
}
"""
_ext = load_inline(name="cudaopt_test_fused_tanh", cpp_sources=_src, functions=["fused"], extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, cols):
        super().__init__()
        self.w = nn.Parameter(torch.randn(cols))
        self.b = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        return _ext.fused(x.contiguous(), self.w, self.b)
'''


@pytest.mark.slow
def test_cpp_candidate_compiles_runs_and_is_cached():
    r = run(CPP_OK)
    assert r.status == "ok", r.message + r.error[-2000:]
    assert r.compile_seconds > 0 and not r.compile_cached
    again = run(CPP_OK)
    assert again.status == "ok" and again.compile_cached


def test_cpp_compile_error_is_reported():
    broken = CPP_OK.replace("auto out = torch::empty_like(x);", "auto out = torch::empty_like(x) this is not C++;").replace(
        "cudaopt_test_fused_tanh", "cudaopt_test_broken")
    r = run(broken)
    assert r.status == "compile_error", r.message
    assert r.stage_reached == "compile" and "error" in r.error.lower()


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "cudaopt.cli", *args], capture_output=True, text=True, timeout=300)


def test_cli_exit_codes_and_json(tmp_path):
    good = tmp_path / "good.py"
    good.write_text(cand("return torch.tanh(x * self.w) + self.b"))
    bad = tmp_path / "bad.py"
    bad.write_text(cand("return x * 2"))
    out = tmp_path / "r.json"
    common = ["--device", "cpu", "--size", "small", "--trials", "4", "--budget-s", "0.3"]
    p = _cli("eval", str(TASK), str(good), *common, "--json", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    d = json.loads(out.read_text())
    assert d["status"] == "ok" and d["correct"] is True and d["speedup"] is not None and len(d["speedup_ci"]) == 2
    assert d["baseline"] == "eager" and d["device"] == "cpu" and isinstance(d["findings"], list)
    p = _cli("eval", str(TASK), str(bad), *common)
    assert p.returncode == 1 and "incorrect" in p.stdout
    long_dir = tmp_path / ("a_directory_name_long_enough_to_pass_any_terminal_width_" * 2)
    p = _cli("eval", str(TASK), str(long_dir / "missing.py"), *common)
    assert p.returncode == 2 and "no such file" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1  # one line, however long the path (rich must not wrap it)
    p = _cli("eval", str(TASK), str(good), "--device", "cpu", "--baseline", "nonsense")
    assert p.returncode == 2 and "baseline" in p.stderr
    p = _cli("tasks", "list", "--json")
    assert p.returncode == 0
    rows = json.loads(p.stdout)
    assert all({"name", "level", "path"} <= set(r) for r in rows)


def test_sampled_comparisons_catch_a_wrong_element_late():
    # Whole comparisons for the first trials, challenged samples after: a candidate that goes wrong only
    # from the third call on is still caught (a tenth of its output wrong).
    body = """
    self.calls = getattr(self, "calls", 0) + 1
    y = torch.tanh(x * self.w) + self.b
    if self.calls > 2:
        y[: max(1, y.shape[0] // 10)] += 0.5
    return y
    """
    r = run(cand(body), compare_full_limit=100, trials=6)
    assert r.status in ("incorrect", "rejected") and r.trials_passed == 2
    ok = run(cand("return torch.tanh(x * self.w) + self.b"), compare_full_limit=100, trials=6)
    assert ok.status == "ok" and ok.trials_passed == 6


SHORTCUT = '''
import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return x * sum(0.5 + 0.01 * k for k in range(24))
'''


def test_large_speedups_are_re_measured_in_a_fresh_process():
    r = evaluate(FIX / "tasks" / "redundant_sum.py", SHORTCUT, EvalOptions(**{**FAST, "trials": 4}))
    assert r.status == "ok", r.message
    assert r.timing.speedup_raw > 3  # 24 additions against one multiply
    assert r.timing.verified is not None and r.timing.verify_speedup is not None


@pytest.mark.slow
def test_torch_compile_baseline():
    r = run(cand("return torch.tanh(x * self.w) + self.b"), baseline="compile", trials=3)
    assert r.status == "ok", r.message + r.error[-1500:]
    assert r.baseline == "compile" and r.timing is not None


def test_callers_main_is_not_re_run(tmp_path):
    # A script without a __main__ guard, and a program read from stdin: both must work as callers.
    script = tmp_path / "caller.py"
    script.write_text(
        "import sys\nfrom cudaopt.evaluate import evaluate, EvalOptions\n"
        f"r = evaluate({str(TASK)!r}, sys.argv[1], EvalOptions(device='cpu', size='small', trials=3, timing=False))\n"
        "print('RESULT', r.status)\n"
    )
    good = tmp_path / "good.py"
    good.write_text(cand("return torch.tanh(x * self.w) + self.b"))
    p = subprocess.run([sys.executable, str(script), str(good)], capture_output=True, text=True, timeout=300)
    assert p.stdout.count("RESULT ok") == 1, p.stdout + p.stderr
    p = subprocess.run([sys.executable, "-", str(good)], input=script.read_text(), capture_output=True, text=True, timeout=300)
    assert p.stdout.count("RESULT ok") == 1, p.stdout + p.stderr


def test_off_stream_names_device_work_away_from_the_harness_stream():
    from types import SimpleNamespace as NS

    from cudaopt.evaluate.child import _off_stream

    def ev(name, start, stream):
        return NS(name=name, time_range=NS(start=start), device_resource_id=stream)

    marker = ev("fill (harness marker)", 0, 7)
    assert _off_stream([marker, ev("my_kernel", 10, 7), ev("Memcpy DtoD", 12, 7)]) == []
    # order in the list does not matter: the earliest event names the harness's stream
    assert _off_stream([ev("scale_shift_kernel", 5, 13), marker]) == ["scale_shift_kernel (stream 13)"]
    assert _off_stream([ev("a", 1, None), marker]) == []  # no stream ids: nothing concluded


def test_device_state_readers_are_none_off_the_gpu():
    import torch

    from cudaopt.evaluate.child import _access_policy_bytes, _persisting_l2_limit

    assert _persisting_l2_limit(torch.device("cpu")) is None
    assert _access_policy_bytes(torch.device("cpu")) is None


def test_result_round_trip_keeps_kernels_and_notes():
    from cudaopt.evaluate.result import EvalResult

    r = EvalResult(status="ok", stage_reached="timed", kernels=("my_kernel", "fill"), notes=("kernel check skipped: x",))
    back = EvalResult.from_dict(json.loads(r.to_json()))
    assert back.kernels == r.kernels and back.notes == r.notes
    assert EvalResult.from_dict({"status": "ok", "stage_reached": "timed"}).kernels == ()  # older JSON still loads


def _seg(kind, blocks, stream=0, device=0, pool=(0, 0)):
    return {"device": device, "stream": stream, "segment_type": kind, "segment_pool_id": pool,
            "blocks": [{"size": n, "state": st} for n, st in blocks]}


def test_poison_requests_cover_the_small_pool_for_small_outputs():
    from cudaopt.evaluate.child import SMALL_REQUEST, poison_requests

    # a 2 MiB small segment with 4 KiB in use: its free rest is one block above 1 MiB, which a single
    # request of that size would take from the large pool instead; it is drawn in chunks of at most 1 MiB
    rest = 2 * SMALL_REQUEST - 4096
    snap = [_seg("small", [(4096, "active_allocated"), (rest, "inactive")]),
            _seg("small", [(8192, "inactive"), (512, "inactive")]),
            _seg("large", [(20 << 20, "inactive")]),
            _seg("small", [(65536, "inactive")], stream=123),  # another stream's pool
            _seg("small", [(65536, "inactive")], pool=(1, 7)),  # a CUDA-graph private pool
            _seg("small", [(65536, "inactive")], device=1)]
    req = poison_requests(snap, 0, 0, [4096], cap=1 << 30)
    # smallest blocks first, no large-pool block; the 512-byte block cannot hold a 4 KiB output: left alone
    assert req == [8192, SMALL_REQUEST, rest - SMALL_REQUEST]
    assert all(n <= SMALL_REQUEST for n in req)
    # a scalar output (rounded up to 512 bytes) can land in any free small block
    assert poison_requests(snap, 0, 0, [4], cap=1 << 30) == [512, 8192, SMALL_REQUEST, rest - SMALL_REQUEST]


def test_poison_requests_skip_small_blocks_and_remainders_no_output_fits():
    from cudaopt.evaluate.child import SMALL_REQUEST, poison_requests

    kb = 1024
    big = SMALL_REQUEST + 20 * kb  # drawn as 1 MiB, then a 20 KiB remainder
    snap = [_seg("small", [(16 * kb, "inactive"), (32 * kb, "inactive"), (big, "inactive"), (40 * kb, "inactive")])]
    # outputs of 30000 and 500000 bytes: the smallest rounds up to 30208; the 16 KiB block and the 20 KiB
    # remainder can hold neither
    assert poison_requests(snap, 0, 0, [500_000, 30_000], cap=1 << 30) == [32 * kb, 40 * kb, SMALL_REQUEST]
    # with a 16 KiB output both are drawn again
    assert poison_requests(snap, 0, 0, [16 * kb], cap=1 << 30) == [16 * kb, 32 * kb, 40 * kb, SMALL_REQUEST, 20 * kb]


def test_poison_requests_large_outputs_take_large_blocks_that_fit_up_to_the_cap():
    from cudaopt.evaluate.child import poison_requests

    mb = 1 << 20
    snap = [_seg("large", [(4 * mb, "inactive"), (64 * mb, "inactive"), (8 * mb, "active_allocated"), (2 * mb, "inactive")]),
            _seg("large", [(32 * mb, "inactive")]),
            _seg("small", [(mb, "inactive")])]
    assert poison_requests(snap, 0, 0, [3 * mb], cap=1 << 30) == [4 * mb, 32 * mb, 64 * mb]
    assert poison_requests(snap, 0, 0, [3 * mb], cap=40 * mb) == [4 * mb, 32 * mb]  # the cap stops it
    assert poison_requests(snap, 0, 0, [3 * mb, 1024], cap=1 << 30) == [mb, 4 * mb, 32 * mb, 64 * mb]


def test_extra_poison_blocks_only_where_too_few_drawn_blocks_hold_an_output():
    from cudaopt.evaluate.child import SMALL_REQUEST, extra_poison_blocks

    kb, mb = 1024, 1 << 20
    # three drawn small blocks hold a 16 KiB output: nothing added (until session 8 one was, every call,
    # and each such block needed a new segment)
    assert extra_poison_blocks([32 * kb, SMALL_REQUEST, SMALL_REQUEST - 16 * kb], [16 * kb], cap=1 << 30) == []
    # one drawn block holds it: two of its own size make three
    assert extra_poison_blocks([8 * kb, 32 * kb], [16 * kb], cap=1 << 30) == [16 * kb, 16 * kb]
    # a large-pool block does not count for a small output, nor a small-pool one for a large output
    assert extra_poison_blocks([64 * mb], [16 * kb], cap=1 << 30) == [16 * kb] * 3
    assert extra_poison_blocks([SMALL_REQUEST] * 4, [4 * mb], cap=1 << 30) == [4 * mb] * 3
    # the largest output first: the blocks added for it hold the smaller ones too
    assert extra_poison_blocks([], [4 * kb, 16 * kb], cap=1 << 30) == [16 * kb] * 3
    assert extra_poison_blocks([], [4 * kb, 2 * mb], cap=1 << 30) == [2 * mb] * 3 + [4 * kb] * 3  # other pools
    # over the cap only the first block that could hold the output is added
    assert extra_poison_blocks([512 * mb], [600 * mb], cap=1 << 30) == [600 * mb]
    assert extra_poison_blocks([700 * mb], [600 * mb], cap=1 << 30) == []  # one fits; more would pass the cap


def test_poisoning_reaches_a_steady_state_without_new_memory():
    """A small-pool model of the caching allocator (best fit, split, merge on free) run through poison's
    draw: after the first calls no request needs new memory (the growth the H200 showed in session 8)."""
    from cudaopt.evaluate.child import SMALL_REQUEST, extra_poison_blocks, poison_requests

    seg_size = 2 * SMALL_REQUEST
    segments: list[list[list]] = []  # per segment: [size, free] blocks in address order
    mallocs = 0

    def alloc(n):
        nonlocal mallocs
        n = -(-n // 512) * 512
        best = None
        for si, seg in enumerate(segments):
            for bi, (size, free) in enumerate(seg):
                if free and size >= n and (best is None or size < segments[best[0]][best[1]][0]):
                    best = (si, bi)
        if best is None:
            mallocs += 1
            segments.append([[seg_size, True]])
            best = (len(segments) - 1, 0)
        si, bi = best
        size = segments[si][bi][0]
        segments[si][bi] = [n, False]
        if size > n:
            segments[si].insert(bi + 1, [size - n, True])
        return (si, n)

    def free(handle):
        si, n = handle
        seg = segments[si]
        i = next(i for i, (size, f) in enumerate(seg) if not f and size == n)
        seg[i][1] = True
        merged = []
        for size, f in seg:
            if merged and f and merged[-1][1]:
                merged[-1][0] += size
            else:
                merged.append([size, f])
        segments[si] = merged

    def snapshot():
        return [{"segment_type": "small", "blocks": [{"size": s, "state": "inactive" if f else "active_allocated"} for s, f in seg]}
                for seg in segments]

    live = alloc(4096)  # a tensor that stays (e.g. a parameter)
    out = 16 * 1024
    history = []
    for _ in range(30):
        reqs = poison_requests(snapshot(), 0, 0, [out], cap=1 << 30)
        blobs = [alloc(n) for n in reqs + extra_poison_blocks(reqs, [out], cap=1 << 30)]
        for b in blobs:
            free(b)
        result = alloc(out)  # the candidate's output lands in a poisoned block...
        free(result)  # ...and is freed after the trial
        history.append(mallocs)
    assert live and history[-1] == history[4], history  # no new segment after the first calls
    assert history[-1] <= 3, history


_SLOW_FIRST_CALL = '''
import time
import torch
import torch.nn as nn
{marker}
class ModelNew(nn.Module):
    def __init__(self, cols):
        super().__init__()
        self.w = nn.Parameter(torch.randn(cols))
        self.b = nn.Parameter(torch.randn(cols))
        self.first = True
    def forward(self, x):
        if self.first:  # stands in for a JIT compiler's first call
            time.sleep({sleep})
            self.first = False
        return torch.tanh(x * self.w) + self.b
'''


def test_jit_candidates_compile_before_the_executable_clock_starts():
    # a first call of 8 s against an executable limit of 4 s (generous for a loaded CI machine)
    jit = run(_SLOW_FIRST_CALL.format(marker="# compiled lazily, as with torch.compile", sleep=8), exec_floor_s=4, trials=3, timing=False)
    assert jit.status == "ok", (jit.status, jit.stage_reached, jit.message, jit.notes)
    assert any("JIT warm-up" in n for n in jit.notes)
    # Without the marker the limit is max(1000 x the judge's reference time, 4 s). With an 8 s first call
    # this once read ok on CI (not reproduced; a reference measured at >= 8 ms a call on a loaded machine
    # would lift the limit that far). 60 s is past any such limit, and the run ends at the limit anyway.
    plain = run(_SLOW_FIRST_CALL.format(marker="", sleep=60), exec_floor_s=4, trials=3, timing=False)
    assert plain.status == "timeout" and plain.stage_reached in ("executable", "correct"), (plain.status, plain.message)


# Answers wrongly whenever it sees input values it has seen before, except in the first calls (the
# correctness trials, the nondeterminism re-run, the warm-up on the fixed sets). A timing loop that cycles
# through a few fixed input sets would show it the same values again and again; the drift check on the
# timed outputs would then see wrong answers. With fresh inputs every timed round it is always right.
_REPEAT_DETECTOR = '''
import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self, cols):
        super().__init__()
        self.w = nn.Parameter(torch.randn(cols))
        self.b = nn.Parameter(torch.randn(cols))
        self.seen = torch.zeros(0)
        self.hits = torch.zeros(0)
    def forward(self, x):
        key = torch.stack([x.sum(), x.abs().sum(), x.max()]).reshape(1, 3)
        again = bool(len(self.seen) and (self.seen - key).abs().sum(1).min() == 0)
        self.seen = torch.cat([self.seen.reshape(-1, 3), key])
        self.hits = torch.cat([self.hits, torch.ones(1 if again else 0)])
        out = torch.tanh(x * self.w) + self.b
        return out * 0 if (again and len(self.hits) > {after}) else out
'''


def test_timed_rounds_see_fresh_inputs_so_content_caches_never_hit():
    # Repeats before timing: the nondeterminism re-run (1) and the warm-up's second and third passes over
    # its four sets (8). Its state lives in tensors, so the static layer has nothing to say: dynamic only.
    r = run(_REPEAT_DETECTOR.format(after=9), trials=8)
    assert r.status == "ok" and not r.findings, (r.status, r.message, r.findings)
    assert r.timing is not None and r.timing.rounds >= 7


def test_a_failed_verification_run_is_the_candidates_result(monkeypatch):
    from cudaopt.evaluate import runner
    from cudaopt.evaluate.result import EvalResult, Timing
    from cudaopt.guards.findings import Finding

    seen = {}

    class SecondRun:  # the fresh-process re-measurement, rejected this time
        def __init__(self, task, source, options, policy, findings, skip_correctness=False):
            seen["options"], seen["skip"] = options, skip_correctness

        def run(self):
            return EvalResult(status="rejected", stage_reached="timed", message="timer_tamper: forged report",
                              findings=(Finding("timer_tamper", "forged report", blocking=True),))

    monkeypatch.setattr(runner, "_Session", SecondRun)
    timing = Timing(5.0, 5.0, 4.9, 5.1, (5.0,) * 7, 0.0, True, 70, 100.0, 20.0, 0.3)
    first = EvalResult(status="ok", stage_reached="timed", correct=True, timing=timing)
    final = runner._verify(runner.resolve_task(str(TASK)), "src", EvalOptions(device="cpu"), None, first)
    assert final.status == "rejected" and final.speedup is None and final.timing.verified is False
    assert "timer_tamper" in {f.category for f in final.findings} and "verification run" in final.message
    assert seen["skip"] is True and seen["options"].kernel_check == "never"


def test_a_torch_compile_candidate_evaluates_inside_the_sandbox():
    # Inductor starts helper processes while it compiles (a Python child for its vector-ISA probe, openssl
    # over a precompiled header): allowed from its own code, so a torch.compile candidate is timed; the
    # same process started from the candidate's code is still refused (test_sandbox.py).
    source = cand("return self._f(x)").replace(
        "self.b = nn.Parameter(torch.randn(cols))",
        "self.b = nn.Parameter(torch.randn(cols))\n        self._f = torch.compile(lambda x: torch.tanh(x * self.w) + self.b)",
    )
    r = run(source, trials=3, exec_floor_s=60)
    assert r.status == "ok", (r.status, r.message, r.error[-1500:])
    assert not [f for f in r.findings if f.category == "process_escape"], r.findings


def test_timed_outputs_are_poisoned_with_values_no_answer_has():
    import math

    import torch

    from cudaopt.evaluate.child import _poison_value

    assert math.isnan(_poison_value(torch.float32)) and math.isnan(_poison_value(torch.bfloat16))
    assert _poison_value(torch.int64) == -(2**63)  # argmax outputs are indices >= 0
    assert _poison_value(torch.uint8) == 255
    assert _poison_value(torch.bool) is None


def test_differs_compares_bits_and_reports_any_write():
    """The queued comparison behind the input-mutation, stale-output and late-write checks."""
    import torch

    from cudaopt.evaluate.child import _differs

    def read(d):
        return bool(d)

    x = torch.tensor([1.0, float("nan"), 0.0])
    assert not read(_differs(x, x.clone()))  # NaN is equal to its own copy
    y = x.clone()
    y[2] = -0.0  # the same value, other bits: a write all the same
    assert read(_differs(y, x))
    assert read(_differs(x, x.clone().reshape(3, 1)))  # shape changed
    assert read(_differs(x, x.double()))  # dtype changed
    assert not read(_differs(torch.empty(0), torch.empty(0)))
    for t in (torch.tensor([True, False]), torch.arange(1, 7, dtype=torch.int64), torch.ones(4, dtype=torch.bfloat16),
              torch.ones(2, dtype=torch.complex64), torch.ones(2, dtype=torch.complex128), torch.ones(4, 4).t()):
        c = t.clone()
        assert not read(_differs(t, c)), t.dtype
        c[(0,) * c.dim()] = 7 if t.dtype != torch.bool else False  # (every first element is 1 or True)
        assert read(_differs(t, c)), t.dtype


def test_poison_fill_trusts_the_driver_memset_only_after_it_proved_itself(monkeypatch):
    """fill_poison on CPU blocks, with stand-ins for cuMemsetD8Async that write, lie or fail."""
    import ctypes

    import torch

    from cudaopt.evaluate import child

    def writes(ptr, value, count, stream):
        ctypes.memset(ptr, value, count)
        return 0

    calls = []

    def counted(fn):
        def f(*a):
            calls.append(fn.__name__)
            return fn(*a)
        f.__name__ = fn.__name__
        return f

    def lies(ptr, value, count, stream):  # says it worked, wrote nothing
        return 0

    def fails(ptr, value, count, stream):
        return 1  # CUDA_ERROR_INVALID_VALUE

    def worker(memset):
        monkeypatch.setattr(child, "_driver_memset", lambda: memset)
        w = object.__new__(child._Worker)
        w.device, w.poison_memset = torch.device("cpu"), None
        return w

    for memset, trusted in ((counted(writes), True), (lies, False), (fails, False), (None, False)):
        w = worker(memset)
        for _ in range(2):  # the first call decides, the second uses what it decided
            blobs = [torch.zeros(n, dtype=torch.uint8) for n in (1, 4096, 3)]
            w.fill_poison(blobs, 0)
            assert all(bool((b == 255).all()) for b in blobs), memset
        assert bool(w.poison_memset) is trusted, memset
    assert calls == ["writes"] * 6  # three blocks, twice, by the memset alone
    assert child.memset_blocks([torch.zeros(2, dtype=torch.uint8)], 0, fails) is False
