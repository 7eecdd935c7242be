"""The two processes of one evaluation: the judge (reference only) and the worker (candidate).

The judge never loads the candidate: it computes the reference outputs that decide correctness. The
worker loads the candidate, compiles it, runs the correctness trials (outputs go back to the parent,
which compares them with the judge's) and, only when the parent says the candidate is correct, times
it against the reference in paired rounds. Both speak to the parent through a Pipe of small tuples.
"""

from __future__ import annotations

import contextlib
import os
import random
import secrets
import sys
import tempfile
import time
import traceback
import uuid

import torch

from cudaopt.evaluate import (
    clock as clock_mod,  # imported before any candidate code: captured clocks
)
from cudaopt.evaluate.codec import send_msg, timing_mac
from cudaopt.evaluate.compare import flatten_outputs
from cudaopt.evaluate.inputs import (
    N_TIMING_SETS,
    copy_into,
    describe_signature_change,
    input_signature,
    make_init_inputs,
    make_inputs,
    seed_generators,
    timing_seed,
    trial_plan,
)
from cudaopt.evaluate.profiling import Profiled
from cudaopt.evaluate.sandbox import (
    Sandbox,
    CONTEXT_SETTINGS,
    ApiWatch,
    TamperWatch,
    child_pids,
    describe_settings,
    new_threads,
    precision_flags,
    set_precision,
    settings_changed,
    shared_settings,
    thread_ids,
)
from cudaopt.evaluate.stats import balanced_orders, estimate, needs_verification
from cudaopt.evaluate.views import view, wants_sample
from cudaopt.tasks.loader import (
    TaskError,
    apply_size,
    check_candidate,
    check_reference,
    import_source,
)

WARMUP_CALLS = 3
CHECK_EVERY = 14  # re-estimate every two rounds per bucket
MIN_TIMING_S = 0.2  # never stop before this much timing, however tight the interval looks
POISON_COPIES = 3  # without an allocator snapshot: freed blocks of each output's size poisoned before a call
POISON_CAP = 1 << 30  # bytes of free cached memory poisoned before a correctness call (at least 4x the outputs)
FRESH_CPU_INPUT_BYTES = 64 << 20  # on a CPU run, timed rounds draw fresh inputs up to this size
JIT_MARKERS = ("torch.compile", "triton.jit", "@triton", "torch._dynamo")  # candidates that compile at their first call


def visible_devices_for(index: int, visible: str | None) -> str:
    """CUDA_VISIBLE_DEVICES that shows this process only GPU `index` of what its parent could see."""
    ids = [v.strip() for v in visible.split(",") if v.strip()] if visible else []
    if ids:
        if index >= len(ids):
            raise RuntimeError(f"cuda:{index} requested but only {len(ids)} GPUs are visible ({visible})")
        return ids[index]
    return str(index)


def _common_setup(options: dict) -> torch.device:
    os.setsid()  # own process group: the parent kills the whole group (compilers, candidate children)
    device = torch.device(options["device"])
    if device.type == "cuda":
        if not torch.cuda.is_initialized():
            # Pinned: the candidate's process sees one GPU, so nothing it does can touch another one.
            os.environ["CUDA_VISIBLE_DEVICES"] = visible_devices_for(device.index or 0, os.environ.get("CUDA_VISIBLE_DEVICES"))
            device = torch.device("cuda:0")
        torch.cuda.set_device(device)
    set_precision(options.get("allow_tf32", False))
    return device


def _load_reference(source: str, size: str, tag: str):
    mod = import_source(source, f"cudaopt_ref_{tag}_{uuid.uuid4().hex[:8]}", "reference.py")
    check_reference(mod, "reference.py")
    apply_size(mod, size)
    sys.modules.pop(mod.__name__, None)  # not findable by name from candidate code
    return mod


def _build(cls, init_inputs, seed: int, device):
    torch.manual_seed(seed)  # same seed before Model and ModelNew: identical initial weights
    model = cls(*init_inputs)
    return model.to(device) if isinstance(model, torch.nn.Module) else model


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# ----------------------------------------------------------------------------------------------------------
# judge


def _forget_process_args() -> None:
    """multiprocessing keeps the target's arguments (our pipe among them) on the process object, one
    attribute away from candidate code; drop them (the parent reads worker messages as plain data in any case)."""
    import multiprocessing

    p = multiprocessing.current_process()
    for name in ("_args", "_kwargs"):
        if hasattr(p, name):
            setattr(p, name, () if name == "_args" else {})


def judge_main(conn, ref_source: str, options: dict) -> None:
    with Profiled("judge", options.get("profile_dir") or "") as prof:
        _judge(conn, ref_source, options, prof)


def _judge(conn, ref_source: str, options: dict, prof: Profiled) -> None:
    try:
        device = _common_setup(options)
        ref = _load_reference(ref_source, options["size"], "judge")
        model = _build(ref.Model, make_init_inputs(ref), options["seed"], device)
        seeds = conn.recv()[1]  # the parent's challenge seeds; the worker never sees them in advance
        with torch.no_grad():
            # A rough reference time, for the executable limit (1000 x reference time).
            x = make_inputs(ref, trial_plan(0, options["seed"]).seed, "plain", device)
            model(*x)
            _sync(device)
            t0 = time.perf_counter()
            for _ in range(3):
                model(*x)
            _sync(device)
            send_msg(conn, ("ref_time", (time.perf_counter() - t0) / 3))
            for i in range(options["trials"]):
                plan = trial_plan(i, options["seed"])
                x = make_inputs(ref, plan.seed, plan.transform, device)
                send_msg(conn, ("ref_out", i, view(model(*x), seeds[i] if wants_sample(i) else None, options["compare_full_limit"])))
            prof.dump()
            while True:
                msg = conn.recv()
                if msg[0] == "sets":
                    for s, seed, input_seed in msg[1]:  # the inputs of the last timed round that used slot s
                        x = make_inputs(ref, input_seed, "plain", device)
                        send_msg(conn, ("ref_set", s, view(model(*x), seed, options["compare_full_limit"])))
                elif msg[0] == "quit":
                    break
        prof.dump()
        send_msg(conn, ("done",))
    except (BrokenPipeError, EOFError):
        return  # the parent has its answer (for example a failed candidate) and closed the pipe
    except BaseException as e:  # noqa: BLE001 - report, the parent decides
        try:
            send_msg(conn, ("judge_error", f"{type(e).__name__}: {e}", traceback.format_exc()[-4000:]))
        except (BrokenPipeError, EOFError, OSError):
            pass


# ----------------------------------------------------------------------------------------------------------
# worker


class _Worker:
    def __init__(self, conn, ref_source: str, cand_source: str, options: dict) -> None:
        self.conn = conn
        self.opt = options
        self.ref_source = ref_source
        self.cand_source = cand_source
        self.guard_time = _Stopwatch()  # seconds spent in dynamic checks (reported: their share of the cost)
        self._finding_keys: set = set()
        self.profiled: Profiled | None = None

    # -- messaging
    def send(self, *msg) -> None:
        if msg and msg[0] in ("done", "fail") and self.profiled is not None:
            self.profiled.dump()  # the parent ends this process once it has its answer
        send_msg(self.conn, msg)

    def check_threads(self, before: frozenset, message: str) -> None:
        """A blocking side_stream finding when threads that were not alive at `before` still run now."""
        self.report_threads(new_threads(before), message)

    def report_threads(self, started: list[str], message: str) -> None:
        if started:
            self.finding("side_stream", message, f"{len(started)} new: {', '.join(started[:6])}", blocking=True)

    def finding(self, category: str, message: str, evidence: str = "", blocking: bool = False) -> None:
        key = (category, message)
        if key not in self._finding_keys:
            self._finding_keys.add(key)
            self.send("finding", {"category": category, "message": message, "evidence": evidence[:300], "source": "dynamic",
                                  "blocking": blocking})

    def _expect(self, kind: str, index: int) -> int:
        msg = self.conn.recv()
        if msg[0] != kind or msg[1] != index:
            raise RuntimeError(f"harness protocol: expected {kind} {index}, got {msg[:2]}")
        return msg[2]

    def flush_sandbox(self) -> None:
        for cat, msg, ev in self.sandbox.events:
            self.finding(cat, msg, ev)
        self.sandbox.events.clear()

    # -- setup
    def setup(self) -> None:
        self.device = _common_setup(self.opt)
        self.send("device_name", torch.cuda.get_device_name(self.device) if self.device.type == "cuda" else _cpu_name())
        self.precision = precision_flags()
        self.send("precision", self.precision)  # what both sides run under, reported with the result
        self.settings = shared_settings()  # the rest of what both sides run under (thread pools, backends)
        self.settings_reported = False
        self.scratch = tempfile.mkdtemp(prefix="cudaopt-scratch-")
        cache = self.opt["cache_dir"]
        ext_dir = os.path.join(cache, "extensions", self.opt["source_hash"])
        self.compile_cached = extension_built(ext_dir)
        os.makedirs(ext_dir, exist_ok=True)
        os.environ["TORCH_EXTENSIONS_DIR"] = ext_dir
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(cache, "inductor"))
        os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(cache, "triton"))
        # Inductor compiles in this process rather than in a pool of subprocesses, which the sandbox
        # would (rightly) refuse to start on a candidate's behalf.
        os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
        if "torch._inductor.config" in sys.modules:  # read at its import; set it directly if that was earlier
            sys.modules["torch._inductor.config"].compile_threads = 1
        self.l2_persist = _persisting_l2_limit(self.device)
        self.l2_window = _access_policy_bytes(self.device)
        self.context = _context_settings(self.device)
        self.poison_note_sent = False
        self.poison_memset = None  # the driver's memset once it proved itself here; False: fill_ (see fill_poison)
        self.cand_calls = 0  # the candidate's calls in this process (the first may start library pools)
        if self.device.type == "cuda" and (self.l2_persist is None or self.l2_window is None):
            self.send("note", f"L2 state not readable (persisting limit {self.l2_persist}, stream window {self.l2_window}): "
                              "the cache_state check relies on the static layer and the L2 flush")
        os.environ["TMPDIR"] = self.scratch
        tempfile.tempdir = self.scratch
        os.chdir(self.scratch)
        self.sandbox = Sandbox(self.scratch, [cache, ext_dir])
        self.quiet = Sandbox(self.scratch, [cache, ext_dir], enforce=False)  # the reference's: same checks, refuses nothing
        self.tamper = TamperWatch()
        self.ref = _load_reference(self.ref_source, self.opt["size"], "worker")
        self._wrap_reference_forward()
        # after the reference's import (what it imported is watched too), before the candidate's
        self.api = ApiWatch()
        self.api_reported = False
        self.inputs_reported = False  # an input changed beyond its values: reported once
        self.context_reported = False  # a CUDA context setting changed: reported once
        self.allocator_reported = False  # the caching allocator emptied in a timed call: reported once

    def _wrap_reference_forward(self) -> None:
        """Count calls of the reference's forward, so a candidate that runs it is seen (reference_inherit)."""
        self.ref_calls = 0
        cls = self.ref.Model
        original = cls.forward
        worker = self

        def counted_forward(mod, *a, **k):
            worker.ref_calls += 1
            return original(mod, *a, **k)

        cls.forward = counted_forward
        self._original_ref_forward = (cls, original)

    def _unwrap_reference_forward(self) -> None:
        """Timing runs the reference as it is: a wrapper would add a call to one side only."""
        cls, original = self._original_ref_forward
        cls.forward = original

    def check_state(self, where: str) -> None:
        with self.guard_time.part("state_checks"):
            self._check_state(where)

    def _check_state(self, where: str) -> None:
        changed = self.tamper.changed()
        if changed:
            self.finding("timer_tamper", f"candidate replaced functions the harness relies on ({where})", ", ".join(changed[:6]))
        # Outside the harness's own no_grad blocks only the context-free settings compare with setup's.
        self.check_settings(self.settings, where, CONTEXT_SETTINGS)
        self.check_api(where)
        now = precision_flags()
        if now != self.precision:
            diff = {k: v for k, v in now.items() if self.precision.get(k) != v}
            self.finding("precision_downgrade", f"candidate changed global precision flags ({where})", str(diff))
            set_precision(self.opt.get("allow_tf32", False))
        # A read that fails (None) proves nothing either way: compare only two readings.
        l2 = _persisting_l2_limit(self.device)
        if l2 is not None and self.l2_persist is not None and l2 != self.l2_persist:
            self.finding("cache_state", f"candidate changed the L2 persisting-cache limit ({where})", f"{self.l2_persist} -> {l2} bytes",
                         blocking=True)
        window = _access_policy_bytes(self.device)
        if window is not None and self.l2_window is not None and window != self.l2_window:
            self.finding("cache_state", f"candidate set an L2 access-policy window on the harness's stream ({where})",
                         f"{self.l2_window} -> {window} bytes", blocking=True)
        context = _context_settings(self.device)
        if context is not None and self.context is not None and not self.context_reported:
            diff = {k: (self.context[k], v) for k, v in context.items() if k in self.context and self.context[k] != v}
            if diff:
                self.context_reported = True
                self.finding("timer_tamper", f"candidate changed CUDA context settings the reference shares ({where})",
                             describe_settings(diff), blocking=True)
        kids = child_pids()
        if kids:
            self.finding("process_escape", f"candidate left child processes running ({where})", str(kids[:5]))
        self.flush_sandbox()

    def check_settings(self, before: dict, where: str, skip: frozenset = frozenset(), now: dict | None = None) -> None:
        """A shared setting changed since `before`: the reference ran (or would run) under other settings
        than the ones it was measured for. Blocking: whatever the policy, the timing is not of the task."""
        if self.settings_reported:
            return
        diff = settings_changed(before, shared_settings() if now is None else now, skip)
        if diff:
            self.settings_reported = True
            self.finding("timer_tamper", f"candidate changed process-wide settings the reference shares ({where})",
                         describe_settings(diff), blocking=True)

    def check_api(self, where: str) -> None:
        """A function or class both sides run through (torch's, torch.nn's, a Tensor method) was replaced:
        the reference runs the candidate's version. Blocking, as a changed setting is."""
        if self.api_reported:
            return
        changed = self.api.changed()
        if changed:
            self.api_reported = True
            self.finding("timer_tamper", f"candidate replaced torch functions the reference runs through ({where})",
                         ", ".join(changed[:6]) + (f" and {len(changed) - 6} more" if len(changed) > 6 else ""), blocking=True)

    def check_inputs(self, before: tuple, inputs, where: str) -> None:
        """An input tensor's class, layout, storage or attributes changed under candidate code. In a timed round
        both sides get the same tensor objects, so the reference would run on what the candidate made of them (a
        subclass whose torch-function hook redoes each op, other strides, a method shadowed by an attribute).
        Blocking: the reference was not timed on the task's inputs."""
        if self.inputs_reported:
            return
        after = input_signature(inputs)
        if after != before:
            self.inputs_reported = True
            self.finding("input_mutation", f"candidate changed its input tensors beyond their values ({where}); "
                         "the reference runs on the same tensors", describe_signature_change(before, after), blocking=True)

    # -- stages
    def compile(self) -> None:
        self.send("stage", "compile")
        t0 = time.perf_counter()
        try:
            with self.sandbox:
                self.cand = import_source(self.cand_source, f"cudaopt_cand_{uuid.uuid4().hex[:8]}", "candidate.py")
        except TaskError as e:
            cause = e.__cause__
            text = f"{type(cause).__name__}: {cause}" if cause else str(e)
            build = "Error building extension" in text or "SyntaxError" in str(e) or "syntax error" in str(e)
            self.flush_sandbox()
            self.send("fail", "compile_error" if build else "runtime_error", str(e).splitlines()[0][:300],
                      "".join(traceback.format_exception(cause))[-6000:] if cause else str(e))
            raise SystemExit(0) from None
        check_candidate(self.cand, self.ref, "candidate.py")
        self.send("compiled", time.perf_counter() - t0, self.compile_cached)
        self.check_state("import")

    def build_models(self) -> None:
        init = make_init_inputs(self.ref)
        with self.sandbox:
            self.cand_model = _build(self.cand.ModelNew, init, self.opt["seed"], self.device)
        self.ref_model = _build(self.ref.Model, make_init_inputs(self.ref), self.opt["seed"], self.device)
        if isinstance(self.cand_model, self.ref.Model) or any(
            isinstance(m, self.ref.Model) for m in (self.cand_model.modules() if isinstance(self.cand_model, torch.nn.Module) else [])
        ):
            self.finding("reference_inherit", "ModelNew is or contains the reference Model", type(self.cand_model).__name__)
        self.param_ptrs = self._storage_ranges(
            list(self.cand_model.parameters()) + list(self.cand_model.buffers())
            if isinstance(self.cand_model, torch.nn.Module) else []
        )

    def jit_warm_up(self) -> None:
        """torch.compile (and Triton's JIT) compile at the first call, which can take a minute: that is
        compilation, so for candidates that use them one call runs here, under the build stage's compile
        deadline, before the executable stage's clock (max(1000 x reference time, floor)) starts."""
        if not any(s in self.cand_source for s in JIT_MARKERS):
            return
        t0 = time.perf_counter()
        plan = trial_plan(0, self.opt["seed"])
        with torch.no_grad():
            self.call_candidate(make_inputs(self.ref, plan.seed, plan.transform, self.device))
        _sync(self.device)
        self.send("note", f"JIT warm-up call before the executable stage (torch.compile/Triton compile at first call): {time.perf_counter() - t0:.1f} s")

    @staticmethod
    def _storage_ranges(tensors) -> list[tuple[int, int]]:
        res = []
        for t in tensors:
            if isinstance(t, torch.Tensor) and t.numel() > 0:
                st = t.untyped_storage()
                res.append((st.data_ptr(), st.data_ptr() + st.nbytes()))
        return res

    def _invoke(self, fn, inputs, guard):
        """One call, the same way for both sides, so neither pays a harness overhead the other does not."""
        before = self.ref_calls
        with guard:
            out = fn(*inputs)
        self.last_ref_calls = self.ref_calls - before
        return out

    def call_candidate(self, inputs):
        self.cand_calls += 1
        out = self._invoke(self.cand_model, inputs, self.sandbox)
        if self.last_ref_calls:
            self.finding("reference_inherit", "candidate ran the reference Model's forward", "Model.forward")
        return out

    def call_reference(self, fn, inputs):
        return self._invoke(fn, inputs, self.quiet)

    def check_output_object(self, out, inputs) -> None:
        """Plain, materialised tensors with real storage that belong to no input or parameter."""
        outs = out if isinstance(out, (tuple, list)) else [out]
        in_ranges = self._storage_ranges(inputs)
        for o in outs:
            if not isinstance(o, torch.Tensor):
                self.finding("lazy_output", f"output is a {type(o).__name__}, not a tensor", type(o).__name__)
                continue
            if type(o) is not torch.Tensor and type(o) is not torch.nn.Parameter:
                self.finding("lazy_output", "output is a tensor subclass (could defer its computation)", type(o).__name__)
            elif o.numel() > 0 and (o.untyped_storage().nbytes() == 0 or o.data_ptr() == 0):
                self.finding("lazy_output", "output has no real storage", str(tuple(o.shape)))
            if o.device != self.device:
                self.finding("problem_changed", f"output on {o.device}, expected {self.device}", str(o.device))
            if o.numel() > 0 and type(o) is torch.Tensor:
                p = o.untyped_storage().data_ptr()
                for lo, hi in in_ranges:
                    if lo <= p < hi:
                        self.finding("output_alias", "output shares storage with an input", str(tuple(o.shape)))
                for lo, hi in self.param_ptrs:
                    if lo <= p < hi:
                        self.finding("output_alias", "output shares storage with a parameter or buffer", str(tuple(o.shape)))

    def _read_flags(self, pending: list) -> None:
        """Read the queued comparisons (one wait) and report each hit (one report per category and message)."""
        if not pending:
            return
        # One value at a time: the first read waits for the queued comparisons, the rest copy ready bytes.
        # (torch.stack(...).tolist() took 8-17 ms on its first call in a fresh process on the H200, where the
        # reads are copies that need no kernel: benchmarks/guard_kernel_probe.py.)
        for differs, category, message, evidence, blocking in pending:
            if bool(differs):
                self.finding(category, message, evidence, blocking=blocking)
        pending.clear()

    def poison(self, sizes: list[int]) -> None:
        """Fill the freed device memory the next outputs can land in with NaN, so parts of an output that
        are never written show up: the free blocks of the caching allocator are drawn (poison_requests),
        filled with 0xFF bytes (NaN in every floating type, fp64 down to bf16) and freed again.
        (Session 3: one large poison block missed outputs under 1 MB, which have a pool of their own.)"""
        if self.device.type != "cuda" or not sizes:
            return
        cap = max(POISON_CAP, 4 * sum(sizes))
        stream = torch.cuda.current_stream(self.device).cuda_stream
        try:
            requests = poison_requests(torch.cuda.memory_snapshot(), self.device.index or 0, stream, sizes, cap)
        except Exception as e:  # noqa: BLE001 - no snapshot: poison blocks of the outputs' own sizes instead
            if not self.poison_note_sent:
                self.send("note", f"allocator snapshot unavailable ({type(e).__name__}); poisoning blocks of the outputs' sizes only")
                self.poison_note_sent = True
            requests = sorted(sizes) * POISON_COPIES
        blobs = [torch.empty(n, dtype=torch.uint8, device=self.device) for n in requests + extra_poison_blocks(requests, sizes, cap)]
        self.fill_poison(blobs, stream)
        del blobs  # back to the caching allocator, poisoned

    def fill_poison(self, blobs: list, stream: int) -> None:
        """0xFF into every block: by the driver's memset on the harness's stream where it works (no kernel,
        so no kernel module to load in each new worker: fill_'s first call took 6.5-16 ms on the H200,
        benchmarks/guard_kernel_probe.py), else by fill_. The memset proves itself once a process: one
        block's last byte is read back (a copy, no kernel) before it is trusted."""
        if not blobs:
            return
        if self.poison_memset is None:  # first use here: find the memset and test it on these very blocks
            fn = _driver_memset()
            probe = next((b for b in blobs if b.numel()), None)
            if fn is not None and probe is not None and memset_blocks(blobs, stream, fn) and int(probe[-1]) == 255:
                self.poison_memset = fn
                return
        elif self.poison_memset and memset_blocks(blobs, stream, self.poison_memset):
            return
        self.poison_memset = False  # fill_ from here on
        for b in blobs:
            b.fill_(255)

    def correctness(self) -> None:
        self.send("stage", "executable")
        opt = self.opt
        prev_inputs = None
        prev_out_obj = prev_out_copy = None
        out_sizes: list[int] = []
        # Comparisons are queued on the device and read together, once a trial (before its output is sent),
        # rather than a device sync per compared tensor (299 an evaluation in session 9's profile). What the
        # guards cost on short evaluations turned out to be mostly first launches (guard_kernel_probe.py).
        # Entries: (differs, category, message, evidence, blocking).
        pending: list[tuple] = []
        with torch.no_grad():
            for i in range(opt["trials"]):
                plan = trial_plan(i, opt["seed"])
                fresh = make_inputs(self.ref, plan.seed, plan.transform, self.device)
                inputs = copy_into(prev_inputs, fresh) if (plan.reuse_buffers and prev_inputs is not None) else fresh
                with self.guard_time.part("input_copies"):
                    pristine = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
                    if i == 0:
                        first_inputs = pristine  # the nondeterminism rerun's inputs, kept rather than drawn again
                with self.guard_time.part("poison"):
                    self.poison(out_sizes)
                if i == 0:
                    self.send("first_call_start",)
                before = thread_ids()
                sig_before = input_signature(inputs)
                out = self.call_candidate(inputs)
                _sync(self.device)
                if i == 0:
                    self.send("first_call_done",)
                    self.send("stage", "correct")
                # Each check's seconds by name (guard_parts): the cheap evaluations are where they show.
                with self.guard_time.part("threads_and_object"):
                    # Threads that a call started and left running. Compared per call, not against a count taken
                    # once: the harness's own work between calls may start library pools (session 3: an honest
                    # A/A was rejected that way). The first call may start a library's pools, so it is exempt.
                    if i > 0:
                        self.check_threads(before, "candidate started threads that are still running after the call: their work is outside any timing window")
                    self.check_output_object(out, inputs)
                with self.guard_time.part("input_mutation"):
                    self.check_inputs(sig_before, inputs, f"trial {i}")
                    for a, b in zip(inputs, pristine):
                        if isinstance(a, torch.Tensor):
                            pending.append((_differs(a, b), "input_mutation", "candidate wrote into its inputs",
                                            f"trial {i}, input shape {tuple(a.shape)}", False))
                # A returned buffer that changes under a later call was a stale buffer, not a result.
                with self.guard_time.part("stale_outputs"):
                    if prev_out_obj is not None:
                        now_ptrs = {o.untyped_storage().data_ptr() for o in flatten_outputs(out) if type(o) is torch.Tensor and o.numel()}
                        for a, b in zip(flatten_outputs(prev_out_obj), prev_out_copy):
                            if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape:
                                if a.untyped_storage().data_ptr() in now_ptrs:
                                    pending.append((_differs(a, b), "output_alias", "an earlier output changed when the candidate ran again (reused output buffer)",
                                                    f"trial {i}", False))
                                else:  # not returned again, yet written to: deferred work from an earlier call
                                    pending.append((_differs(a, b), "side_stream", "an earlier output was written after its call returned: work runs outside the call",
                                                    f"trial {i}", True))
                with self.guard_time.part("flag_reads"):
                    self._read_flags(pending)  # this trial's, and the previous trial's late writes
                seed = None
                if wants_sample(i):
                    self.send("cand_ready", i)  # the output exists; only now is the sample drawn
                    seed = self._expect("challenge", i)
                self.send("cand_out", i, view(out, seed, opt["compare_full_limit"]))
                out_sizes = [t.numel() * t.element_size() for t in flatten_outputs(out) if isinstance(t, torch.Tensor) and t.numel()]
                with self.guard_time.part("output_copies"):
                    prev_out_obj, prev_out_copy = out, [t.detach().clone() if isinstance(t, torch.Tensor) else t for t in flatten_outputs(out)]
                    if i == 0:
                        first_out = prev_out_copy  # (a copy already: nothing writes into it)
                    _sync(self.device)
                with self.guard_time.part("late_writes"):
                    # Sent and waited on: an output that still changes now is being written outside the call.
                    # (Queued now, so it compares now; read with the next trial's flags.)
                    for a, b in zip(flatten_outputs(out), prev_out_copy):
                        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
                            pending.append((_differs(a, b), "side_stream", "the output kept changing after the call returned: work runs outside the call",
                                            f"trial {i}", True))
                prev_inputs = inputs  # the next reuse trial writes new values into these very tensors
            with self.guard_time.part("flag_reads"):
                self._read_flags(pending)
            # nondeterminism: the first trial's inputs again
            guard_t0 = time.perf_counter()
            again = flatten_outputs(self.call_candidate(first_inputs))
            _sync(self.device)
            worst, scale = 0.0, 1.0
            pairs = [(a, b) for a, b in zip(first_out, again) if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
                     and a.shape == b.shape and a.is_floating_point() and a.numel()]
            # Bit-identical reruns (most kernels) need no arithmetic: the double-precision difference below
            # launched kernels this process had not loaded yet, ~50 ms an evaluation on the H200 (session 9).
            if not all(_same(a, b) for a, b in pairs):
                for a, b in pairs:
                    d = float((a.double() - b.double()).abs().nan_to_num(0.0).max())
                    if d > worst:
                        worst, scale = d, float(a.double().nan_to_num(0.0).pow(2).mean().sqrt()) or 1.0
            self.guard_time.add(time.perf_counter() - guard_t0, "nondeterminism_rerun")
            # The state check's findings go before the nondeterminism report: that report completes the
            # correctness stage, and the parent gives its verdict as soon as it has read it, so a finding
            # sent after it (a candidate that flipped a precision flag AND is wrong) raced the verdict and
            # was lost about half the time (redteam precision_downgrade_cpu_global_flag_vars, session 20).
            self.check_state("correctness trials")
            self.send("nondeterminism", worst, scale)

    # -- timing
    def _baseline(self):
        name = self.opt["baseline"]
        model = self.ref_model
        if name == "eager":
            return model
        if name == "compile":
            return torch.compile(model)
        if name == "compile-reduce-overhead":
            return torch.compile(model, mode="reduce-overhead")
        if name == "cuda-graph":
            if self.device.type != "cuda":
                raise RuntimeError("the cuda-graph baseline needs a CUDA device")
            return _GraphReplay(model, self.sets[0], self.device)
        raise ValueError(name)

    def timing(self, fresh_offered: bool = False, helper_checks: bool = False) -> None:
        """Paired rounds, reference and candidate in random order. Every round draws fresh inputs from a
        seed the parent hands out just before that round (nothing in this process knows a later round's
        values), so no answer can be replayed from an earlier round, whatever it is keyed on; where the
        task's inputs are drawn on the CPU the rounds rotate through N_TIMING_SETS fixed sets instead,
        and a note says so."""
        self.send("stage", "timed")
        opt = self.opt
        dev = self.device
        self._unwrap_reference_forward()
        draw_info: dict = {}  # whether get_inputs() fell back to the CPU (read from the first set's draw)
        self.sets = [make_inputs(self.ref, timing_seed(s, opt["seed"]), "plain", dev, draw_info if s == 0 else None)
                     for s in range(N_TIMING_SETS)]
        # What each standing set is beyond its values (both sides get these objects): checked before every call.
        set_sigs = [input_signature(xs) for xs in self.sets]
        clock = clock_mod.DeviceClock(dev, head_start_us=opt.get("head_start_us", 0.0)) if dev.type == "cuda" else clock_mod.HostClock()
        with torch.no_grad():
            # read in this block, so that grad mode compares too: a candidate that leaves autograd on after
            # its call makes the reference, timed next under the same no_grad, record a graph
            settled = shared_settings()
            base = self._baseline()
            for _ in range(WARMUP_CALLS):
                for k, x in enumerate(self.sets):
                    base(*x)
                    before = thread_ids()
                    self.call_candidate(x)
                    self.check_inputs(set_sigs[k], x, "a warm-up call")
                    # the first call in this process (a re-measurement has no correctness trials) may start
                    # a library's pools, as trial 0 may: exempt, like trial 0
                    if self.cand_calls > 1:
                        self.check_threads(before, "candidate threads still running after a warm-up call: their work is outside any window")
            _sync(dev)
            # Drawn afresh per evaluation: nothing outside this process can predict which side goes first.
            orders = balanced_orders(random.Random(secrets.randbits(64)))
            # Both sides go through one code path (`side_call`), with the same checks and the same work after
            # the call: two hand-kept branches had read the H200 A/A 0.2-0.3% in the candidate's favour
            # (47 of 58 tasks above 1), unexplained; the code that runs must not depend on the side.
            ev = {"ref": [], "cand": []}
            dv = {"ref": [], "cand": []}
            kept: dict = {"ref": {}, "cand": {}}  # each side's outputs of the last N_TIMING_SETS rounds
            models = {"ref": base, "cand": self.cand_model}
            guards = {"ref": self.quiet, "cand": self.sandbox}

            # Memory the poisoning below must never write: the standing input buffers and both models'
            # weights (an output that aliases one is output_alias's business, not a reason to corrupt it).
            alloc_prev = _allocator_counters(dev)  # the allocator's counters after the last call, whichever side's
            keep_out = self._storage_ranges([t for xs in self.sets for t in xs] + [
                t for m in (base, self.cand_model) if isinstance(m, torch.nn.Module) for t in (*m.parameters(), *m.buffers())])

            def side_call(side: str, slot: int, x) -> None:
                nonlocal alloc_prev
                # before either side's call: only candidate code can have changed them since the harness made them
                self.check_inputs(set_sigs[slot], x, "before a timed call")
                before = thread_ids()
                model, guard = models[side], guards[side]
                # The caching allocator handed memory back to the driver: the next call, whichever side's, gets
                # its memory from cudaMalloc (synchronising, tens of us each) instead of a warm cache. Inside the
                # reference's window that is the task's own doing; inside the candidate's window, or between
                # windows (where only the harness, which never empties it, and candidate code left behind such as
                # a finaliser can run), it is the candidate's.
                pre = _allocator_counters(dev)
                released = allocator_release(alloc_prev, pre)
                out, t = clock.time(lambda: self._invoke(model, x, guard), lazy)
                alloc_prev = _allocator_counters(dev)
                if side == "cand" and released is None:
                    released = allocator_release(pre, alloc_prev)
                if released and not self.allocator_reported:
                    self.allocator_reported = True
                    self.finding("timer_tamper", "candidate code emptied the caching allocator during the timed rounds; the "
                                 "reference's next allocations go to cudaMalloc", released, blocking=True)
                started = new_threads(before)
                if side == "cand" and t.check:  # before anything touches the output (a lazy one may fail to)
                    self.finding("lazy_output", "timed output is not a plain materialised tensor", t.check)
                    raise _LazyOutput(t.check)
                # Each side's output is copied (the candidate's copies are verified after timing) and then
                # poisoned, twice: the reference's output and its copy (no answer of the reference may sit in
                # memory while the candidate runs: an address read from the allocator would lead to it), the
                # candidate's output twice over (the same traffic, and its copy left intact).
                copy = kept[side][slot] = _clone_outputs(out)
                for o, c in zip(flatten_outputs(out), flatten_outputs(copy)):
                    poison = _poison_value(o.dtype) if isinstance(o, torch.Tensor) and o.numel() > 0 else None
                    if poison is not None and not any(a <= o.untyped_storage().data_ptr() < b for a, b in keep_out):
                        o.fill_(poison)
                        (c if side == "ref" else o).fill_(poison)
                del out, copy
                ev[side].append(t.event_us)
                dv[side].append(t.device_us)
                # Read after both sides' calls (one code path), judged after the candidate's: a setting it
                # left changed (threads, backends, grad mode) is what the reference's next call runs under.
                now = shared_settings()
                if side == "cand":
                    self.report_threads(started, "candidate threads still running after a timed call: their work is outside the window")
                    self.check_settings(settled, "after a timed call", now=now)
                    self.check_api("after a timed call")
            t_start = time.perf_counter()

            ref_kinds = [type(o) for o in flatten_outputs(self.call_reference(base, self.sets[0]))]
            threads = thread_ids()  # after the reference's first call in this process: its library pools exist

            def lazy(out) -> str | None:
                # inside the window: a lazy or storage-less output would be caught before the clock stops;
                # non-tensor entries are allowed where the reference has them too (e.g. an int in a tuple)
                for o, kind in zip(flatten_outputs(out), ref_kinds):
                    if isinstance(o, torch.Tensor) or kind is torch.Tensor:
                        if type(o) is not torch.Tensor or (o.numel() > 0 and o.data_ptr() == 0):
                            return type(o).__name__
                return None

            # Fresh inputs per round unless drawing them is slow by construction (not by a measurement the
            # candidate's threads could disturb): inputs drawn on the CPU for a GPU run, or large ones on the CPU.
            fresh = fresh_offered and fresh_inputs_affordable(self.sets[0], dev, draw_info)
            if fresh_offered and not fresh:
                why = "this task's inputs are drawn on the CPU" if dev.type == "cuda" else f"its inputs exceed {FRESH_CPU_INPUT_BYTES >> 20} MB"
                self.send("note", f"timed rounds rotate through {N_TIMING_SETS} fixed input sets: {why} "
                                  "(a cache keyed on input contents is not defeated in timing)")
            n = 0
            while True:
                # outside the window: fresh values for this round, or the next of the fixed sets
                round_seed_n = None
                if fresh:
                    self.send("round_ready", n)
                    round_seed_n = self._expect("round_seed", n)
                x = self.sets[n % N_TIMING_SETS]
                order = ("ref", "cand") if next(orders) else ("cand", "ref")
                for side in order:
                    if fresh:
                        # The round's values are drawn before *each* of its two calls (the same values both
                        # times, into the slot's standing buffers): drawn once, only the first call followed a
                        # draw, and on the CPU the A/A read 1.08-1.14 (the second call ran on warmer caches).
                        x = self.sets[n % N_TIMING_SETS] = copy_into(x, make_inputs(self.ref, round_seed_n, "plain", dev))
                        seed_generators(secrets.randbits(62), dev)  # torch.initial_seed() must not reveal the round's seed
                    clock.flush()
                    side_call(side, n % N_TIMING_SETS, x)
                n += 1
                del x  # the next round's inputs are drawn with only the kept outputs alive
                elapsed = time.perf_counter() - t_start
                if n >= opt["min_rounds"] and n % CHECK_EVERY == 0 and elapsed >= MIN_TIMING_S:
                    est = estimate([r / c for r, c in zip(ev["ref"], ev["cand"])], opt["variance_gate"])
                    if est.stable and est.rel_half_width <= opt["target_rel_ci"]:
                        break
                # On the budget, stop only after a whole pair of rounds (both orders), after whole sets of
                # CHECK_EVERY rounds (an even number per bucket) once there are that many.
                if elapsed >= opt["budget_s"] and n >= 7 and n % (CHECK_EVERY if n >= CHECK_EVERY else 2) == 0:
                    break
            seconds = time.perf_counter() - t_start
            self.check_threads(threads, "candidate threads still running after timed calls: their work is outside any timing window")
        window = "events"
        ev_ref, ev_cand, dv_ref, dv_cand = ev["ref"], ev["cand"], dv["ref"], dv["cand"]
        last_out = kept["cand"]
        gap_ref = _median([d - e for d, e in zip(dv_ref, ev_ref)])
        gap_cand = _median([d - e for d, e in zip(dv_cand, ev_cand)])
        if dev.type == "cuda" and gap_cand - gap_ref > max(5.0, 0.03 * _median(ev_cand)):
            self.finding("side_stream", "device work continued after the candidate's stream was done; timed with a device-wide window",
                         f"median extra {gap_cand - gap_ref:.1f} us per call")
            window = "device"
        refs, cands = (dv_ref, dv_cand) if window == "device" else (ev_ref, ev_cand)
        est = estimate([r / c for r, c in zip(refs, cands)], opt["variance_gate"])
        # The kept timed outputs are side_call's copies, taken right after each call: a candidate that
        # returned garbage in the timed rounds cannot fix them up in its later calls (the profiler's below).
        _sync(dev)
        when = opt.get("kernel_check", "auto")
        # auto: only for speedups that the verification rule treats as suspicious (> 3x, or > 2x the best
        # so far): starting the profiler costs 3.5-6 s on the H200, more than the rest of an evaluation.
        # It runs before the report is signed: kernels seen on another stream move the timing to the
        # device-wide window even when their work hid inside the stream's (small side-stream gains).
        # With helper_checks the parent has a warm helper process run the check after this report (its
        # profiler start-up was paid there, off the critical path); it needs the device-window figures too.
        suspicious = needs_verification(est.rounded, opt.get("previous_best"))
        if dev.type == "cuda" and not helper_checks and (when == "always" or (when == "auto" and suspicious)):
            with self.guard_time.part("kernel_check_profiler"):
                side = self.kernel_check()
            if side and window == "events":
                window, refs, cands = "device", dv_ref, dv_cand
                est = estimate([r / c for r, c in zip(refs, cands)], opt["variance_gate"])
        payload = {**_figure(est, refs, cands), "seconds": float(seconds), "window": window,
                   "calls_per_side": int(n), "fresh_inputs": bool(fresh)}
        if helper_checks and window == "events":
            dest = estimate([r / c for r, c in zip(dv_ref, dv_cand)], opt["variance_gate"])
            payload["device_window"] = _figure(dest, dv_ref, dv_cand)
        # The parent hands out the key for this report only now, after the last timed call: candidate code
        # that wrote a report of its own into the pipe earlier could not have signed it.
        self.send("timing_ready",)
        msg = self.conn.recv()
        if msg[0] != "key":
            raise RuntimeError(f"harness protocol: expected the timing key, got {msg[0]!r}")
        self.send("timing", payload, timing_mac(msg[1], payload))
        del msg
        self.check_state("timing")
        # drift: the outputs of the last timed call on each input set go to the parent for checking
        for s, out in sorted(last_out.items()):
            self.send("timed_ready", s)
            self.send("timed_out", s, view(out, self._expect("challenge_set", s), self.opt["compare_full_limit"]))

    def kernel_check(self) -> bool:
        """From the kernels actually launched: did the candidate run a kernel of its own, and did all of its
        device work run on the harness's stream? Returns True when some ran on another stream."""
        from cudaopt.guards.static import kernel_names

        defined = kernel_names(self.cand_source)
        try:
            from torch.profiler import ProfilerActivity, profile

            _sync(self.device)  # nothing of earlier calls may still be running when the marker is launched
            with profile(activities=[ProfilerActivity.CUDA]) as prof, torch.no_grad():
                # A harness kernel first, alone on the device: the earliest device event names the stream
                # the harness times (the profiler's stream ids are its own, not torch's).
                torch.empty(1, device=self.device).fill_(1.0)
                _sync(self.device)
                self.call_candidate(self.sets[0])
                _sync(self.device)
            events = list(prof.events())
        except Exception as e:  # noqa: BLE001 - profiler unavailable: say so, do not fail the candidate
            self.send("note", f"kernel check skipped: {type(e).__name__}: {e}")
            return False
        device_events = sorted((e for e in events if getattr(e, "device_type", None) is not None and "cuda" in str(e.device_type).lower()),
                               key=lambda e: e.time_range.start)
        # Without CUPTI the profiler records no device events and says nothing: without the marker first,
        # conclude nothing (an empty list would read as "no kernel of its own ran").
        if not device_events or "fill" not in device_events[0].name.lower():
            self.send("note", "kernel check skipped: the profiler recorded no device events (CUPTI unavailable?)")
            return False
        names = sorted({e.name for e in device_events[1:]})  # the candidate's, without the marker
        own = [n for n in names if any(d in n for d in defined)]
        self.send("kernels", names[:50])
        if not own:
            if defined:
                self.finding("exception_fallback", "the candidate defines CUDA kernels but none of them ran", ", ".join(sorted(defined))[:200])
            self.finding("no_custom_kernel", "no kernel of the candidate's own was launched; only library kernels ran", ", ".join(names[:5]))
        # A CUDA graph's kernels are reported on the streams the graph executor picked, not the stream it
        # was launched on; the launch itself is stream-ordered, so its work is inside the window anyway.
        graph = any("GraphLaunch" in e.name for e in events)
        elsewhere = [] if graph else _off_stream(device_events)
        if graph:
            self.send("note", "stream check skipped: the call replays a CUDA graph (its kernels' streams are the executor's)")
        if elsewhere:
            self.finding("side_stream", "kernels ran on a CUDA stream other than the harness's; timed with a device-wide window",
                         ", ".join(elsewhere[:4])[:300])
        return bool(elsewhere)

    def run(self) -> None:
        self.setup()
        self.compile()
        self.send("stage", "build")
        self.build_models()
        self.jit_warm_up()
        if not self.opt.get("skip_correctness"):
            self.correctness()
        if not self.opt.get("timing", True):
            self.send("guard_seconds", self.guard_time.seconds, self.guard_time.parts)
            self.send("done",)
            return
        msg = self.conn.recv()
        if msg[0] != "time":
            self.send("done",)
            return
        self.timing(bool(msg[1]) if len(msg) > 1 else False, bool(msg[2]) if len(msg) > 2 else False)
        self.send("guard_seconds", self.guard_time.seconds, self.guard_time.parts)
        self.send("done",)

    def run_checker(self) -> None:
        """The kernel-check helper: the same set-up, import and models as the worker, the profiler's one-time
        start-up (3.5 s on the H200, Kineto's prepare) paid while the worker runs its correctness trials, then
        idle until the parent sends `check` (after the worker's timing, so nothing here shares the device
        with a timed round) or ends this process. A profiler session left in the worker itself would add
        ~4 us to every later launch and leave threads running (scripts/profiler_probe.py, session 6)."""
        self.setup()
        self.compile()
        self.build_models()
        self.jit_warm_up()
        _sync(self.device)
        t0 = time.perf_counter()
        from torch.profiler import ProfilerActivity, profile

        # (on a CPU, where only the tests run a helper, the CPU activity: CUDA alone would be no activity)
        with profile(activities=[ProfilerActivity.CUDA if self.device.type == "cuda" else ProfilerActivity.CPU]):
            pass
        self.send("check_ready", time.perf_counter() - t0)
        msg = self.conn.recv()
        if msg[0] != "check":
            return
        self.sets = [make_inputs(self.ref, timing_seed(0, self.opt["seed"]), "plain", self.device)]
        with torch.no_grad():
            for _ in range(CHECK_WARMUP_CALLS):  # as in the worker, the profiled call is not the first
                self.call_candidate(self.sets[0])
        _sync(self.device)
        side = self.kernel_check()
        self.check_state("kernel check")
        self.send("check_done", bool(side))


SMALL_REQUEST = 1 << 20  # the caching allocator serves requests up to 1 MiB from its small pool (2 MiB segments)


def extension_built(ext_dir: str) -> bool:
    """Whether a candidate's build folder (the per-source cache) already holds its built extension."""
    return os.path.isdir(ext_dir) and any(f.endswith(".so") for _, _, fs in os.walk(ext_dir) for f in fs)


def poison_requests(snapshot: list[dict], device: int, stream: int, sizes: list[int], cap: int) -> list[int]:
    """The byte sizes to allocate, in order, so that every free block an output of `sizes` could be handed
    is drawn (and then poisoned). The allocator gives a request the smallest free block of its pool that
    fits (512-byte granularity) and splits off the rest, so drawing the free blocks smallest first, each as
    exact requests, takes each block itself:
      - outputs up to 1 MiB come from the small pool: its free blocks (the free remainders of 2 MiB
        segments are up to 2 MiB, more than one request may take) are drawn in chunks of at most 1 MiB;
        blocks (and chunk remainders) smaller than the smallest such output, rounded up to the 512-byte
        granularity, are left alone: no output can be handed one (session 7: drawing them cost
        0.17-0.21 s an evaluation for 32 KB outputs);
      - larger outputs come from the large pool, whose free blocks are all above 1 MiB: one request each,
        for the blocks at least as large as the smallest such output.
    Only the default pool of this device and stream counts (CUDA-graph private pools do not serve plain
    requests). Stops at `cap` bytes, smallest blocks first."""
    small_out = [n for n in sizes if n <= SMALL_REQUEST]
    large_out = [n for n in sizes if n > SMALL_REQUEST]
    small, large = [], []
    for seg in snapshot:
        if seg.get("device", device) != device or seg.get("stream", stream) != stream:
            continue
        if tuple(seg.get("segment_pool_id", (0, 0)) or (0, 0)) != (0, 0):
            continue
        pool = small if seg.get("segment_type") == "small" else large
        pool += [b["size"] for b in seg.get("blocks", ()) if b.get("state") == "inactive"]
    out, total = [], 0

    def take(n: int) -> bool:
        nonlocal total
        if total + n > cap:
            return False
        out.append(n)
        total += n
        return True

    if small_out:
        least = max(512, -(-min(small_out) // 512) * 512)
        for size in sorted(b for b in small if b >= least):
            rest = size
            while rest >= least:
                chunk = min(rest, SMALL_REQUEST)
                if not take(chunk):
                    break
                rest -= chunk
    if large_out:
        for size in sorted(b for b in large if b >= min(large_out)):
            if not take(size):
                break
    return out


def extra_poison_blocks(requests: list[int], sizes: list[int], cap: int, copies: int = POISON_COPIES) -> list[int]:
    """Blocks of the outputs' own sizes to poison beyond the drawn free blocks (`requests`): for each output,
    up to `copies` poisoned blocks that could hold it (an output of up to 1 MiB only a small-pool block, a
    larger one only a large-pool block), the ones beyond the first only within `cap` bytes in all. Once
    created they stay cached and are drawn as free blocks from the next call on, so none is added again.
    (Until session 8 one block of each output size was added after every free block had been drawn, so
    each trial cudaMalloc'ed a new segment and drew all the earlier ones: 0.16-0.34 s of poisoning over
    100 trials for 16-256 KB outputs on the H200, 2-3x what 4-128 MB outputs cost.)"""
    extra: list[int] = []
    total = sum(requests)
    for n in sorted(sizes, reverse=True):  # largest first: its blocks hold the smaller outputs too
        small = n <= SMALL_REQUEST
        fit = sum(1 for r in requests + extra if (r <= SMALL_REQUEST) == small and r >= n)
        while fit < copies and (fit == 0 or total + n <= cap):
            extra.append(n)
            total += n
            fit += 1
    return extra


def fresh_inputs_affordable(inputs: list, dev, draw_info: dict) -> bool:
    """Whether every timed round can draw fresh inputs, judged from one draw (`inputs`, and the `info`
    make_inputs filled in): on a GPU, when get_inputs() runs there (a CPU draw of hundreds of MB costs
    ~0.5 s); on a CPU, up to FRESH_CPU_INPUT_BYTES."""
    if dev.type == "cuda":
        return not draw_info.get("cpu_fallback")
    return sum(t.numel() * t.element_size() for t in inputs if isinstance(t, torch.Tensor)) <= FRESH_CPU_INPUT_BYTES


def _clone_outputs(out):
    if isinstance(out, torch.Tensor):
        return out.clone()
    if isinstance(out, (tuple, list)):
        return type(out)(_clone_outputs(o) for o in out)
    return out


def _off_stream(device_events) -> list[str]:
    """Device events (kernels, copies) on another stream than the first event's, as 'name (stream s)'.
    Empty when the profiler gave no stream ids."""
    timed = [e for e in device_events if getattr(e, "device_resource_id", None) is not None]
    if len(timed) < 2:
        return []
    timed.sort(key=lambda e: e.time_range.start)
    home = timed[0].device_resource_id
    return [f"{e.name[:80]} (stream {e.device_resource_id})" for e in timed[1:] if e.device_resource_id != home]


def _cuda_driver():
    """libcuda, the one driver instance of the process (a runtime loaded here could be a second copy of
    libcudart beside torch's; the driver is shared by every runtime and extension)."""
    import ctypes

    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None


def _driver_memset():
    """cuMemsetD8Async of the process's driver, typed; None without one."""
    import ctypes

    lib = _cuda_driver()
    fn = getattr(lib, "cuMemsetD8Async", None) if lib is not None else None
    if fn is None:
        return None
    fn.argtypes = [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t, ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return fn


def memset_blocks(blobs: list, stream: int, memset) -> bool:
    """Each block's bytes set to 0xFF by `memset(pointer, byte, count, stream)` (cuMemsetD8Async's
    signature), queued on `stream`; False at the first call that fails."""
    for b in blobs:
        if memset(b.data_ptr(), 0xFF, b.numel(), stream) != 0:
            return False
    return True


def _context_driver(device):
    """The driver, with the device's primary context existing and current on this thread; None on the CPU or
    without a driver."""
    if device.type != "cuda":
        return None
    torch.empty(1, device=device)
    return _cuda_driver()


def _persisting_l2_limit(device) -> int | None:
    """CU_LIMIT_PERSISTING_L2_CACHE_SIZE of the current context: a candidate that reserves L2 for its own
    data changes it. None where it cannot be read (no GPU, no driver, no current context)."""
    import ctypes

    lib = _context_driver(device)
    if lib is None:
        return None
    value = ctypes.c_size_t(0)
    if lib.cuCtxGetLimit(ctypes.byref(value), 0x06) != 0:
        return None
    return int(value.value)


# The CUDA context's other device-wide settings that change how fast the reference's kernels run, read through the
# driver (native code can set them under any name): the L1/shared split preferred for every kernel without its own
# (cuCtxSetCacheConfig), how a host thread waits for the device (the scheduling bits of cuCtxSetFlags: blocking
# sync slows a reference that synchronises inside its forward) and the L2 fetch granularity (cuCtxSetLimit).
# The stack, heap and printf limits are left out: they cost memory, not time, and the driver raises the stack
# size by itself for a kernel that needs more.
_CU_CTX_SCHED_MASK = 0x07
_CU_LIMIT_MAX_L2_FETCH_GRANULARITY = 0x05


def _context_settings(device) -> dict | None:
    """{setting: value} for each of the settings above that the driver reports for the current context; None
    without a GPU or a driver. Compared between two readings only, like the persisting limit."""
    import ctypes

    lib = _context_driver(device)
    if lib is None:
        return None
    out = {}
    value, size = ctypes.c_uint(0), ctypes.c_size_t(0)
    if lib.cuCtxGetCacheConfig(ctypes.byref(value)) == 0:
        out["cache_config"] = int(value.value)
    if lib.cuCtxGetFlags(ctypes.byref(value)) == 0:
        out["sched_flags"] = int(value.value) & _CU_CTX_SCHED_MASK
    if lib.cuCtxGetLimit(ctypes.byref(size), _CU_LIMIT_MAX_L2_FETCH_GRANULARITY) == 0:
        out["l2_fetch_granularity"] = int(size.value)
    return out


# Captured at the worker's import, before any candidate code: the allocator's own counters (a candidate could
# rebind torch.cuda.memory_stats, a Python function, to hide a release).
_cuda_memory_stats = getattr(torch._C, "_cuda_memoryStats", None)


def _allocator_counters(device) -> tuple[int, int] | None:
    """(bytes the caching allocator has handed back to the driver so far, its out-of-memory retries) for the
    device; None on the CPU or where torch does not report them. Memory goes back to the driver only when
    something empties the cache (torch.cuda.empty_cache, or its C++ form, which no name in the source needs
    to show) or when an allocation fails and the allocator frees its cache to retry (counted as a retry)."""
    if device.type != "cuda" or _cuda_memory_stats is None:
        return None
    try:
        stats = _cuda_memory_stats(device.index if device.index is not None else torch.cuda.current_device())
        return int(stats["reserved_bytes"]["all"]["freed"]), int(stats["num_alloc_retries"])
    except (KeyError, TypeError, RuntimeError):
        return None


def allocator_release(before: tuple[int, int] | None, now: tuple[int, int] | None) -> str | None:
    """What candidate-side code did to the caching allocator between two readings, as evidence, or None:
    memory handed back to the driver other than by an out-of-memory retry (pressure, not a choice), or the
    accumulated counters reset (torch.cuda.reset_accumulated_memory_stats would hide a release). None
    where either reading is missing."""
    if before is None or now is None:
        return None
    if now[0] < before[0] or now[1] < before[1]:
        return "the allocator's accumulated counters were reset"
    if now[1] == before[1] and now[0] > before[0]:
        return f"{now[0] - before[0]} bytes released to the driver"
    return None


def _access_policy_bytes(device) -> int | None:
    """num_bytes of the access-policy (L2 persistence) window on the harness's current stream; 0 when none
    is set. None where it cannot be read (the legacy default stream may refuse the query)."""
    if device.type != "cuda":
        return None
    import ctypes

    lib = _cuda_driver()
    if lib is None:
        return None
    value = (ctypes.c_ubyte * 64)()  # CUlaunchAttributeValue: a 64-byte union
    stream = ctypes.c_void_p(torch.cuda.current_stream(device).cuda_stream)
    if lib.cuStreamGetAttribute(stream, 1, ctypes.byref(value)) != 0:  # CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW
        return None
    return int.from_bytes(bytes(value[8:16]), "little")  # {void* base_ptr; size_t num_bytes; ...}


def _figure(est, refs: list[float], cands: list[float]) -> dict:
    """The speedup estimate and median times of one window, as the signed timing report carries them."""
    return {
        "speedup_raw": float(est.raw), "speedup": float(est.rounded), "ci_low": float(est.ci_low), "ci_high": float(est.ci_high),
        "bucket_means": [float(m) for m in est.bucket_means], "bucket_variance": float(est.bucket_variance),
        "stable": bool(est.stable), "rounds": int(est.rounds), "ref_time_us": float(_median(refs)),
        "cand_time_us": float(_median(cands)),
    }


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal, counting NaN as equal to NaN. torch.equal first (two reads, no temporaries): outputs and most
    inputs hold no NaN; only where it says no are the NaN positions looked at."""
    if a.dtype != b.dtype or a.shape != b.shape:  # (torch.equal promotes dtypes; `.data =` can swap one in place)
        return False
    if torch.equal(a, b):
        return True
    if a.is_floating_point():
        nan = a.isnan()
        return bool(torch.equal(nan, b.isnan()) and torch.equal(a[~nan], b[~nan]))  # (nan_to_num would equate inf and max)
    return False


_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _differs(a: torch.Tensor, b: torch.Tensor):
    """Whether `a` now holds other bits than its copy `b`, as a 0-dim bool tensor on their device (queued,
    no host sync) or, where no integer view fits, a bool. Bits, not values: NaN is equal to its own copy,
    and a copy is bit for bit what was copied, so any difference is a write."""
    if a.dtype != b.dtype or a.shape != b.shape:  # (`.data =` or resize_ can swap one in place)
        return True
    if a.numel() == 0:
        return False
    bits = _BITS.get(a.element_size())
    if bits is None or a.device != b.device:
        return not _same(a, b)
    try:
        return torch.ne(a.reshape(-1).view(bits), b.reshape(-1).view(bits)).any()
    except RuntimeError:  # a layout no integer view takes
        return not _same(a, b)


def _cpu_name() -> str:
    import platform

    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


class _Stopwatch:
    """Seconds spent in the dynamic checks, by part (reported, so their cost can be seen and cut)."""

    def __init__(self) -> None:
        self.parts: dict[str, float] = {}

    @property
    def seconds(self) -> float:
        return sum(self.parts.values())

    def add(self, dt: float, part: str) -> None:
        self.parts[part] = self.parts.get(part, 0.0) + dt

    @contextlib.contextmanager
    def part(self, name: str):
        t0 = time.perf_counter()
        try:
            yield self
        finally:
            self.add(time.perf_counter() - t0, name)


def _poison_value(dtype: torch.dtype):
    """What overwrites a timed output: NaN, or the integer type's extreme (the most negative one where
    there is one: no index, count or class id). None for bool, which has no value that is not an answer."""
    if dtype.is_floating_point or dtype.is_complex:
        return float("nan")
    if dtype == torch.bool:
        return None
    info = torch.iinfo(dtype)
    return info.min if info.min < 0 else info.max


class _LazyOutput(Exception):
    pass


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    return s[len(s) // 2] if s else 0.0


class _GraphReplay:
    """The CUDA-graph baseline: the reference captured once, replayed per call (inputs copied in)."""

    def __init__(self, model, example, device) -> None:
        self.static_in = [x.clone() if isinstance(x, torch.Tensor) else x for x in example]
        s = torch.cuda.Stream(device)
        s.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(s):
            for _ in range(3):
                model(*self.static_in)
        torch.cuda.current_stream(device).wait_stream(s)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_out = model(*self.static_in)

    def __call__(self, *xs):
        for d, x in zip(self.static_in, xs):
            if isinstance(d, torch.Tensor):
                d.copy_(x)
        self.graph.replay()
        return self.static_out


CHECK_WARMUP_CALLS = 3


def checker_main(conn, ref_source: str, cand_source: str, options: dict) -> None:
    worker_main(conn, ref_source, cand_source, options, role="checker")
    # Status 0 only from here: the parent reads any other end after the report as someone else's doing
    # (and no thread the candidate left behind can keep this process alive).
    os._exit(0)


def worker_main(conn, ref_source: str, cand_source: str, options: dict, role: str = "worker") -> None:
    _forget_process_args()
    w = _Worker(conn, ref_source, cand_source, options)
    w.profiled = Profiled(role, options.get("profile_dir") or "").__enter__()
    try:
        w.run_checker() if role == "checker" else w.run()
    except SystemExit:
        pass
    except _LazyOutput:
        send_msg(conn, ("fail", "rejected", "timed output is not a plain materialised tensor", ""))
    except BaseException as e:  # noqa: BLE001 - everything a candidate does wrong is a result
        tb = traceback.format_exc()[-6000:]
        text = f"{type(e).__name__}: {e}".splitlines()[0][:300] if str(e) else type(e).__name__
        if isinstance(e, TaskError):
            send_msg(conn, ("fail", "runtime_error", str(e), tb))
        elif "illegal memory access" in str(e) or "CUDA error" in str(e):
            send_msg(conn, ("fail", "runtime_error", f"CUDA error: {text}", tb))
        else:
            send_msg(conn, ("fail", "runtime_error", text, tb))
    finally:
        try:
            w.flush_sandbox()
        except Exception:  # noqa: BLE001
            pass
