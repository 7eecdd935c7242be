"""Profiler feedback: the ncu CSV and ptxas parsers on recorded text, ncu missing / forbidden / faked,
the real `nvcc -Xptxas -v` fallback on a tiny kernel, storage beside the candidate, and the prompt."""

import shutil
import stat
from pathlib import Path

import pytest

from cudaopt.db import CandidateRecord, ExemplarDB
from cudaopt.db.sampling import Exemplar
from cudaopt.profile import (
    ProfiledPromptBuilder,
    ProfileReport,
    db_profile_text,
    extract_cuda_sources,
    format_profile,
    load_profile,
    parse_ncu_csv,
    parse_ptxas,
    profile_candidate,
    ptxas_resources,
    run_ncu,
    save_profile,
)
from cudaopt.tasks.loader import load_task

FIX = Path(__file__).parent / "fixtures"
TASK = FIX / "tasks" / "scaled_tanh.py"

# What `ncu --csv --print-units base --print-kernel-base function --metrics ...` writes: ncu's own
# lines and the program's output first, then one row per launch and metric.
NCU_CSV = '''==PROF== Connected to process 4242 (/usr/bin/python3.12)
==PROF== Profiling "scaled_tanh_kernel" - 0: 0%....50%....100% - 9 passes
==PROF== Profiling "scaled_tanh_kernel" - 1: 0%....50%....100% - 9 passes
==PROF== Profiling "vectorized_elementwise_kernel" - 2: 0%....50%....100% - 9 passes
cudaopt-profile-driver: done
==PROF== Disconnected from process 4242
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","python3.12","127.0.0.1","scaled_tanh_kernel","1","7","(256, 1, 1)","(16384, 1, 1)","0","9.0","Command line profiler metrics","dram__throughput.avg.pct_of_peak_sustained_elapsed","%","88.12"
"0","4242","python3.12","127.0.0.1","scaled_tanh_kernel","1","7","(256, 1, 1)","(16384, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","24,608"
"0","4242","python3.12","127.0.0.1","scaled_tanh_kernel","1","7","(256, 1, 1)","(16384, 1, 1)","0","9.0","Command line profiler metrics","launch__registers_per_thread","register/thread","16"
"0","4242","python3.12","127.0.0.1","scaled_tanh_kernel","1","7","(256, 1, 1)","(16384, 1, 1)","0","9.0","Command line profiler metrics","lts__t_sector_hit_rate.pct","%","33.50"
"0","4242","python3.12","127.0.0.1","scaled_tanh_kernel","1","7","(256, 1, 1)","(16384, 1, 1)","0","9.0","Command line profiler metrics","sm__warps_active.avg.pct_of_peak_sustained_active","%","81.00"
"0","4242","python3.12","127.0.0.1","scaled_tanh_kernel","1","7","(256, 1, 1)","(16384, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum","byte","0"
"1","4242","python3.12","127.0.0.1","scaled_tanh_kernel","1","7","(256, 1, 1)","(16384, 1, 1)","0","9.0","Command line profiler metrics","dram__throughput.avg.pct_of_peak_sustained_elapsed","%","87.88"
"1","4242","python3.12","127.0.0.1","scaled_tanh_kernel","1","7","(256, 1, 1)","(16384, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","25,392"
"1","4242","python3.12","127.0.0.1","scaled_tanh_kernel","1","7","(256, 1, 1)","(16384, 1, 1)","0","9.0","Command line profiler metrics","launch__registers_per_thread","register/thread","16"
"1","4242","python3.12","127.0.0.1","scaled_tanh_kernel","1","7","(256, 1, 1)","(16384, 1, 1)","0","9.0","Command line profiler metrics","lts__t_sector_hit_rate.pct","%","34.50"
"1","4242","python3.12","127.0.0.1","scaled_tanh_kernel","1","7","(256, 1, 1)","(16384, 1, 1)","0","9.0","Command line profiler metrics","sm__warps_active.avg.pct_of_peak_sustained_active","%","79.00"
"1","4242","python3.12","127.0.0.1","scaled_tanh_kernel","1","7","(256, 1, 1)","(16384, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum","byte","0"
"2","4242","python3.12","127.0.0.1","vectorized_elementwise_kernel","1","7","(128, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","3.2"
"2","4242","python3.12","127.0.0.1","vectorized_elementwise_kernel","1","7","(128, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum","Kbyte","1.5"
"2","4242","python3.12","127.0.0.1","vectorized_elementwise_kernel","1","7","(128, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","lts__t_sector_hit_rate.pct","%","n/a"
'''

# `nvcc -Xptxas -v` output: a kernel that spills, a device function ptxas reports on its own, and the
# older one-line format (smem and cmem on the `Used` line).
PTXAS = '''ptxas info    : 0 bytes gmem
ptxas info    : Function properties for _Z6helperf
    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function '_Z11tile_kernelPKfPfi' for 'sm_90a'
ptxas info    : Function properties for _Z11tile_kernelPKfPfi
    280 bytes stack frame, 24 bytes spill stores, 24 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 280 bytes cumulative stack size, 16384 bytes smem, 380 bytes cmem[0], 8 bytes cmem[2]
ptxas info    : Compile time = 31.994 ms
ptxas info    : Compiling entry function '_Z7add_onePfi' for 'sm_80'
ptxas info    : Function properties for _Z7add_onePfi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, 360 bytes cmem[0]
'''

TINY_CANDIDATE = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

HEAD = """
__global__ void scaled_tanh_kernel(const float* x, const float* w, const float* b, float* y, int n, int cols) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
"""
BODY = """
    if (i < n) y[i] = tanhf(x[i] * w[i % cols]) + b[i % cols];
}
"""
CUDA_SRC = HEAD + BODY
ext = load_inline(name="tiny", cpp_sources="", cuda_sources=[CUDA_SRC], extra_cuda_cflags=["-O3", "--use_fast_math", "-arch=sm_80"])


class ModelNew(nn.Module):
    def __init__(self, cols):
        super().__init__()
        self.w = nn.Parameter(torch.randn(cols))
        self.b = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        return ext.forward(x, self.w, self.b)
'''


def test_parse_ncu_csv_averages_launches_and_converts_units():
    kernels = parse_ncu_csv(NCU_CSV, own_names={"scaled_tanh_kernel"})
    assert [k.name for k in kernels] == ["scaled_tanh_kernel", "vectorized_elementwise_kernel"]
    own, lib = kernels
    assert own.own and not lib.own and own.calls == 2 and lib.calls == 1
    assert own.time_us == pytest.approx(25.0)  # (24,608 + 25,392) / 2 ns
    assert own.metrics["dram_throughput_pct"] == pytest.approx(88.0) and own.metrics["l2_hit_rate_pct"] == pytest.approx(34.0)
    assert own.metrics["achieved_occupancy_pct"] == pytest.approx(80.0) and own.metrics["registers_per_thread"] == 16
    assert lib.time_us == pytest.approx(3.2) and lib.metrics["local_store_bytes"] == 1500 and "l2_hit_rate_pct" not in lib.metrics
    assert parse_ncu_csv("==PROF== no kernels\n") == []


def test_driver_script_is_valid_python():
    from cudaopt.profile.ncu import DRIVER

    compile(DRIVER, "driver.py", "exec")
    assert "torch.cuda.profiler.start()" in DRIVER and "profiler.stop()" in DRIVER


def test_parse_ptxas_per_kernel():
    ks = parse_ptxas(PTXAS)
    assert [k.name for k in ks] == ["_Z11tile_kernelPKfPfi", "_Z7add_onePfi"]  # the device function is left out
    tile, add = ks
    assert (tile.registers, tile.shared_bytes, tile.constant_bytes, tile.barriers) == (255, 16384, 388, 1)
    assert (tile.stack_frame_bytes, tile.spill_store_bytes, tile.spill_load_bytes, tile.arch) == (280, 24, 24, "sm_90a")
    assert (add.registers, add.shared_bytes, add.constant_bytes, add.arch) == (8, 0, 360, "sm_80")
    if shutil.which("c++filt"):
        assert tile.display_name == "tile_kernel(float const*, float*, int)"


def test_extract_cuda_sources_follows_names_concatenation_and_lists():
    sources, flags = extract_cuda_sources(TINY_CANDIDATE)
    assert len(sources) == 1 and "scaled_tanh_kernel" in sources[0] and "tanhf" in sources[0]
    assert flags == ["-O3", "--use_fast_math"]  # -arch is ours to choose
    assert extract_cuda_sources("x = load_inline(name='a', cpp_sources='', cuda_sources=make())\n") == ([], [])
    assert extract_cuda_sources("not python (") == ([], [])


@pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(), reason="needs nvcc")
def test_ptxas_fallback_for_real_on_a_tiny_kernel():
    status, reason, kernels = ptxas_resources(TINY_CANDIDATE, arch="sm_90a")
    assert (status, reason) == ("ok", "")
    (k,) = kernels
    assert k.arch == "sm_90a" and 1 <= k.registers <= 64 and k.spill_store_bytes == 0 and k.shared_bytes == 0
    assert k.display_name.startswith("scaled_tanh_kernel")
    # A compile error is a status and a reason, not an exception.
    status, reason, _ = ptxas_resources(TINY_CANDIDATE.replace("tanhf(", "tanhf_nope("), arch="sm_90a")
    assert status == "failed" and "nvcc failed" in reason


def test_profile_candidate_without_ncu_and_on_cpu(tmp_path):
    cand = tmp_path / "cand.py"
    cand.write_text(TINY_CANDIDATE)
    rep = profile_candidate(TASK, cand, device="cuda", ncu_path=str(tmp_path / "no-ncu-here"), ptxas=False)
    assert rep.ncu_status == "missing" and "ncu" in rep.ncu_reason and rep.kernels == () and rep.ptxas_status == "skipped"
    rep = profile_candidate(TASK, (FIX / "candidates" / "scaled_tanh_torch.py"), device="cpu")
    assert rep.ncu_status == "skipped" and rep.ptxas_status == "no_cuda_source" and not rep.has_metrics
    assert format_profile(rep) == ""


def _fake_ncu(tmp_path: Path, body: str) -> str:
    script = tmp_path / "ncu"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_ncu_not_permitted_and_faked_output(tmp_path):
    task = load_task(TASK)
    forbidden = _fake_ncu(tmp_path, 'echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access '
                                    'NVIDIA GPU Performance Counters on the target device 0." >&2\nexit 1\n')
    status, reason, kernels = run_ncu(task.source, TINY_CANDIDATE, device="cuda:0", ncu_path=forbidden)
    assert status == "not_permitted" and "NVreg_RestrictProfilingToAdminUsers" in reason and kernels == []

    (tmp_path / "out.csv").write_text(NCU_CSV)
    args = tmp_path / "args.txt"
    ok = _fake_ncu(tmp_path, f'echo "$@" > {args}\ncat {tmp_path / "out.csv"}\n')
    status, reason, kernels = run_ncu(task.source, TINY_CANDIDATE, device="cuda:0", ncu_path=ok)
    assert (status, reason) == ("ok", "") and kernels[0].own and kernels[0].name == "scaled_tanh_kernel"
    cmd = args.read_text()
    for needle in ("--clock-control none", "--profile-from-start off", "--csv", "--print-units base",
                   "sm__warps_active.avg.pct_of_peak_sustained_active", "launch__registers_per_thread", "driver.py"):
        assert needle in cmd


def test_store_beside_candidate_and_show_in_prompt(tmp_path):
    task = load_task(TASK)
    report = ProfileReport(task="scaled_tanh", device="cuda:0", ncu_status="ok",
                           kernels=tuple(parse_ncu_csv(NCU_CSV, {"scaled_tanh_kernel"})),
                           ptxas_status="ok", resources=tuple(parse_ptxas(PTXAS)))
    text = format_profile(report)
    assert "scaled_tanh_kernel (own kernel): 25.0 us/launch x 2" in text and "achieved occupancy 80.0%" in text
    assert "L2 hit rate 34.0%" in text and "16 registers/thread" in text
    assert "255 registers/thread, 16.4 KB static shared memory, spills 24 B stored / 24 B loaded" in text
    assert ProfileReport.from_dict(report.to_dict()) == report

    with ExemplarDB(tmp_path / "db.sqlite") as db:
        run = db.start_run("r")
        tid = db.ensure_task(task)
        rec = db.add_candidate(CandidateRecord(task_id=tid, run_id=run.id, source=TINY_CANDIDATE, status="ok", speedup=1.5))
        other = db.add_candidate(CandidateRecord(task_id=tid, run_id=run.id, source="x = 1\n", status="ok", speedup=1.1))
        save_profile(db, rec.id, report)
        save_profile(db, rec.id, report)  # replacing is fine
        assert load_profile(db, rec.id) == report and load_profile(db, other.id) is None
        builder = ProfiledPromptBuilder(profile_text=db_profile_text(db))
        prompt = builder.build(task, [Exemplar(rec.id, rec.source, 1.5), Exemplar(other.id, other.source, 1.1)])
    assert prompt.count("Profile of implementation") == 1 and "Profile of implementation 1:\nNsight Compute" in prompt
    assert prompt.index("Profile of implementation 1") < prompt.index("Implementation 2")
    assert ProfiledPromptBuilder().build(task, [Exemplar(1, "x", 1.0)]) == ProfiledPromptBuilder().contrastive(task, [Exemplar(1, "x", 1.0)])


def test_report_says_why_when_ncu_missing_in_prompt_text():
    rep = ProfileReport(task="t", ncu_status="missing", ncu_reason="ncu (Nsight Compute) not found", ptxas_status="missing",
                        ptxas_reason="nvcc not found")
    assert format_profile(rep) == "No Nsight Compute metrics: ncu (Nsight Compute) not found\nNo compiler resource report: nvcc not found"


def test_profile_corpus_script_seeds_the_db_once_and_writes_the_technique_report(tmp_path):
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    cmd = [sys.executable, str(root / "scripts" / "profile_corpus.py"), "--db", str(tmp_path / "c.sqlite"),
           "--results", str(root / "docs" / "data" / "corpus_h200_session3.json"), "--techniques-out", str(tmp_path / "t")]
    first = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "added 46 corpus candidates" in first.stdout
    assert (tmp_path / "t" / "techniques.md").read_text().count("| vectorized_access |") >= 1
    again = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=300)
    assert "added 0 corpus candidates" in again.stdout  # a second run adds nothing
    with ExemplarDB(tmp_path / "c.sqlite") as db:
        cands = db.candidates()
    assert len(cands) == 46 and sum(c.status == "incorrect" for c in cands) == 8
    assert all((c.speedup is None) == (c.status != "ok") for c in cands)
    bad = subprocess.run(cmd[:-4] + ["--results", str(tmp_path / "missing.json")], check=False, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "cannot read --results" in bad.stderr


# -- what the profiling costs: the ncu command line, the driver's range, the evaluator's cache, ptxas -----

def test_ncu_command_line_exactly():
    from cudaopt.profile.ncu import ncu_command

    cmd = ncu_command("/opt/ncu", Path("/t/driver.py"), Path("/t/reference.py"), Path("/t/candidate.py"), size="full", calls=3,
                      metrics=["gpu__time_duration.sum", "launch__registers_per_thread"], launch_count=50)
    import sys

    assert cmd == ["/opt/ncu", "--clock-control", "none", "--profile-from-start", "off", "--target-processes", "all",
                   "--replay-mode", "kernel", "--launch-count", "50", "--csv", "--print-units", "base", "--print-kernel-base",
                   "function", "--metrics", "gpu__time_duration.sum,launch__registers_per_thread",
                   sys.executable, "/t/driver.py", "/t/reference.py", "/t/candidate.py", "full", "3"]
    # No sections (only the listed metrics are collected), no cap when none is asked for.
    assert "--section" not in cmd and "--set" not in cmd
    uncapped = ncu_command("ncu", Path("d"), Path("r"), Path("c"), size="small", calls=1, metrics=["a"])
    assert "--launch-count" not in uncapped and uncapped[-2:] == ["small", "1"]


REF_LOGGED = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, cols):
        super().__init__()
        print("EVENT reference_model", flush=True)

    def forward(self, x):
        print("EVENT reference_forward", flush=True)
        return x


cols = 8


def get_inputs():
    print("EVENT get_inputs", flush=True)
    return [torch.randn(4, cols)]


def get_init_inputs():
    print("EVENT get_init_inputs", flush=True)
    return [cols]


SMALL = {"cols": 4}
'''

CAND_LOGGED = '''import torch
import torch.nn as nn

print("EVENT candidate_import", flush=True)


class ModelNew(nn.Module):
    def __init__(self, cols):
        super().__init__()
        self.cols = cols

    def forward(self, x):
        print("EVENT candidate_forward", flush=True)
        return x * 2
'''


def test_driver_profiles_only_the_candidates_calls(tmp_path):
    """The driver on the CPU (cuda:0 -> cpu, the profiler range calls recorded): input generation, the
    weights and the warm-up are outside the range, exactly `calls` candidate calls inside, and the
    reference model is never built or run."""
    import subprocess
    import sys

    from cudaopt.profile.ncu import DRIVER, driver_phases

    assert DRIVER.count('torch.device("cuda:0")') == 1
    (tmp_path / "ref.py").write_text(REF_LOGGED)
    (tmp_path / "cand.py").write_text(CAND_LOGGED)
    on_cpu = DRIVER.replace('torch.device("cuda:0")', 'torch.device("cpu")')
    harness = tmp_path / "harness.py"
    harness.write_text(
        "import sys, torch, torch.cuda.profiler as prof\n"
        "torch.cuda.synchronize = lambda *a, **k: None\n"
        "prof.start = lambda: print('EVENT profiler_start', flush=True)\n"
        "prof.stop = lambda: print('EVENT profiler_stop', flush=True)\n"
        f"sys.argv = ['driver.py', {str(tmp_path / 'ref.py')!r}, {str(tmp_path / 'cand.py')!r}, 'small', '3']\n"
        f"exec(compile({on_cpu!r}, 'driver.py', 'exec'), {{'__name__': '__main__'}})\n")
    proc = subprocess.run([sys.executable, str(harness)], check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    events = [ln.split(" ", 1)[1] for ln in proc.stdout.splitlines() if ln.startswith("EVENT ")]
    assert events == ["candidate_import", "get_init_inputs", "get_inputs", "candidate_forward", "profiler_start",
                      "candidate_forward", "candidate_forward", "candidate_forward", "profiler_stop"]
    phases = driver_phases(proc.stderr)
    assert set(phases) == {"import_torch_s", "load_candidate_s", "setup_s", "profiled_s"} and all(v >= 0 for v in phases.values())
    assert driver_phases("no such line") == {} and driver_phases("cudaopt-profile-driver: phases {not json}") == {}


def test_ncu_driver_uses_the_evaluators_extension_cache(tmp_path):
    """TORCH_EXTENSIONS_DIR of the ncu-launched process is the folder the evaluator and prebuild use for
    this source, so a prebuilt extension is loaded, not compiled again; the timings come back."""
    from cudaopt.evaluate.runner import source_hash as eval_hash
    from cudaopt.profile.ncu import extension_dir, run_ncu_detailed

    task = load_task(TASK)
    (tmp_path / "out.csv").write_text(NCU_CSV)
    seen = tmp_path / "seen.txt"
    ncu = _fake_ncu(tmp_path, f'echo "$TORCH_EXTENSIONS_DIR|$CUDA_VISIBLE_DEVICES|$@" > {seen}\ncat {tmp_path / "out.csv"}\n'
                              'echo \'cudaopt-profile-driver: phases {"import_torch_s": 4.5, "load_candidate_s": 0.75, '
                              '"setup_s": 1.25, "profiled_s": 3.0}\' >&2\n')
    cache = tmp_path / "cache"
    want = str(cache / "extensions" / eval_hash(TINY_CANDIDATE))
    assert extension_dir(TINY_CANDIDATE, str(cache)) == want

    cold = run_ncu_detailed(task.source, TINY_CANDIDATE, device="cuda:1", ncu_path=ncu, cache_dir=str(cache))
    env_dir, visible, args = seen.read_text().strip().split("|")
    assert (env_dir, visible) == (want, "1") and "--launch-count 100" in args
    assert cold.status == "ok" and cold.extension_cached is False and cold.extension_dir == want
    assert cold.phases == {"import_torch_s": 4.5, "load_candidate_s": 0.75, "setup_s": 1.25, "profiled_s": 3.0}
    assert cold.seconds >= 0 and cold.command[0] == ncu

    # What prebuild leaves behind: a built .so in <cache>/extensions/<hash>/<name>/.
    (Path(want) / "tiny").mkdir(parents=True)
    (Path(want) / "tiny" / "tiny.so").write_bytes(b"")
    warm = run_ncu_detailed(task.source, TINY_CANDIDATE, device="cuda:0", ncu_path=ncu, cache_dir=str(cache))
    assert warm.extension_cached is True and seen.read_text().startswith(want + "|0|")

    # Through profile_candidate: the same folder, and the split lands in the report's timings.
    rep = profile_candidate(TASK, TINY_CANDIDATE, ncu_path=ncu, cache_dir=str(cache), ptxas=False)
    assert rep.ncu_status == "ok" and rep.timings["extension_cached"] is True and rep.timings["ncu_load_candidate_s"] == 0.75
    assert "ncu_s" in rep.timings and "ptxas_s" not in rep.timings
    assert ProfileReport.from_dict(rep.to_dict()) == rep
    # Reports stored before timings existed still load.
    old = rep.to_dict()
    del old["timings"]
    assert ProfileReport.from_dict(old).timings == {}


def test_launch_cap_is_reported(tmp_path):
    task = load_task(TASK)
    (tmp_path / "out.csv").write_text(NCU_CSV)  # 3 launches
    ncu = _fake_ncu(tmp_path, f'cat {tmp_path / "out.csv"}\n')
    status, reason, kernels = run_ncu(task.source, TINY_CANDIDATE, ncu_path=ncu, cache_dir=str(tmp_path), launch_count=3)
    assert status == "ok" and "cap of 3 profiled launches" in reason and sum(k.calls for k in kernels) == 3
    status, reason, _ = run_ncu(task.source, TINY_CANDIDATE, ncu_path=ncu, cache_dir=str(tmp_path), launch_count=4)
    assert (status, reason) == ("ok", "")


def test_ncu_timeout_is_a_status(tmp_path):
    task = load_task(TASK)
    slow = _fake_ncu(tmp_path, "echo started\nsleep 5\n")
    status, reason, kernels = run_ncu(task.source, TINY_CANDIDATE, ncu_path=slow, cache_dir=str(tmp_path), timeout_s=0.5)
    assert status == "failed" and "longer than" in reason and kernels == []


def test_ptxas_compiles_device_code_only():
    from cudaopt.profile.ptxas import ptxas_command

    cmd = ptxas_command("nvcc", Path("c.cu"), Path("c.cubin"), arch="sm_90a", extra=["-Ifoo"], flags=["-O3"])
    assert cmd == ["nvcc", "-arch=sm_90a", "-std=c++17", "-cubin", "-Xptxas", "-v", "-Ifoo", "-O3", "c.cu", "-o", "c.cubin"]
    assert "-c" in ptxas_command("nvcc", Path("c.cu"), Path("c.o"), arch="sm_90a", extra=[], flags=[], device_only=False)


@pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(), reason="needs nvcc")
def test_ptxas_cubin_reports_what_the_full_compile_reports():
    from cudaopt.profile.ptxas import compile_resources

    (src,), flags = extract_cuda_sources(TINY_CANDIDATE)
    cubin, why = compile_resources(src, arch="sm_90a", flags=flags)
    full, why_full = compile_resources(src, arch="sm_90a", flags=flags, device_only=False)
    assert (why, why_full) == ("", "") and cubin and cubin == full


def test_profile_candidate_takes_a_ptxas_result_and_runs_no_nvcc(tmp_path):
    from cudaopt.profile import KernelResources

    given = (("ok", "", [KernelResources(name="_Zk", display_name="k", arch="sm_90a", registers=32)]), 12.5)
    rep = profile_candidate(TASK, TINY_CANDIDATE, ncu=False, nvcc=str(tmp_path / "no-nvcc"), ptxas_result=given)
    assert rep.ptxas_status == "ok" and rep.resources[0].registers == 32 and rep.timings == {"ptxas_s": 12.5}
    rep = profile_candidate(TASK, TINY_CANDIDATE, ncu=False, nvcc=str(tmp_path / "no-nvcc"))
    assert rep.ptxas_status == "missing" and "ptxas_s" in rep.timings


def _load_profile_corpus():
    import importlib.util
    import sys

    path = Path(__file__).resolve().parents[1] / "scripts" / "profile_corpus.py"
    spec = importlib.util.spec_from_file_location("profile_corpus_script", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclass looks its module up there
    spec.loader.exec_module(mod)
    return mod


def test_profile_corpus_builds_ahead_into_the_cache_ncu_loads_from(tmp_path, monkeypatch, capsys):
    from cudaopt.evaluate import prebuild
    from cudaopt.evaluate.prebuild import BuildOutcome
    from cudaopt.evaluate.runner import source_hash as eval_hash
    from cudaopt.profile import api, load_profiles

    pc = _load_profile_corpus()
    task = load_task(TASK)
    broken = TINY_CANDIDATE.replace("tanhf(", "tanhf_nope(")
    other = TINY_CANDIDATE.replace('name="tiny"', 'name="tiny2"')
    db_path = tmp_path / "db.sqlite"
    with ExemplarDB(db_path) as db:
        run = db.start_run("r")
        tid = db.ensure_task(task)
        ids = [db.add_candidate(CandidateRecord(task_id=tid, run_id=run.id, source=s, status="ok", speedup=1.0)).id
               for s in (TINY_CANDIDATE, broken, other)]
    built, ptxas_for = [], []

    def fake_prebuild(sources, jobs=None, cache_dir=None, timeout_s=600):
        assert jobs == 1 and cache_dir == str(tmp_path / "cache")
        built.extend(sources)
        return [BuildOutcome(eval_hash(s), "nope" not in s, 2.0, "" if "nope" not in s else "error: tanhf_nope") for s in sources]

    def fake_ptxas(source, **kw):
        ptxas_for.append(source)
        return ("ok", "", []), 1.5

    monkeypatch.setattr(prebuild, "prebuild", fake_prebuild)
    monkeypatch.setattr(api, "timed_ptxas", fake_ptxas)
    (tmp_path / "out.csv").write_text(NCU_CSV)
    calls = tmp_path / "ncu_calls.txt"
    ncu = _fake_ncu(tmp_path, f'echo "$TORCH_EXTENSIONS_DIR" >> {calls}\ncat {tmp_path / "out.csv"}\n')

    # No budget: nothing is profiled (the workers skip their work too).
    assert pc.profile_within(str(db_path), 0.0, "cuda", jobs=2, cache_dir=str(tmp_path / "cache"), ncu_path=ncu) == 0
    assert not calls.exists()

    n = pc.profile_within(str(db_path), 600.0, "cuda", jobs=2, cache_dir=str(tmp_path / "cache"), ncu_path=ncu)
    assert n == 3 and sorted(built) == sorted([TINY_CANDIDATE, broken, other]) and sorted(ptxas_for) == sorted(built)
    # ncu ran for the two that built, each in its own cache folder; the broken one got a reason instead.
    assert calls.read_text().split() == [str(tmp_path / "cache" / "extensions" / eval_hash(s)) for s in (TINY_CANDIDATE, other)]
    with ExemplarDB(db_path) as db:
        reps = load_profiles(db)
    good, bad = reps[ids[0]], reps[ids[1]]
    assert good.ncu_status == "ok" and good.kernels[0].name == "scaled_tanh_kernel" and good.ptxas_status == "ok"
    assert good.timings["build_s"] == 2.0 and good.timings["ptxas_s"] == 1.5 and "ncu_s" in good.timings
    assert bad.ncu_status == "failed" and "did not build: error: tanhf_nope" in bad.ncu_reason and bad.ptxas_status == "ok"
    out = capsys.readouterr().out
    assert "profiled 3 (" in out and "ptxas ok 1.5 s, build 2.0 s" in out
    # Stored profiles are not profiled again; the summary carries the timing split.
    assert pc.profile_within(str(db_path), 600.0, "cuda", jobs=2, cache_dir=str(tmp_path / "cache"), ncu_path=ncu) == 0
    line = pc.timing_line(reps.values())
    assert line.startswith("timings, mean s over 3 profiles:") and "ptxas 1.5" in line and "build 2.0" in line
