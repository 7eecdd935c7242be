"""Technique tagger (hand-labelled snippets and seed corpus files) and the technique report end to end."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from cudaopt.analysis.report import (
    analyze_db,
    bootstrap_interval,
    point_biserial,
    technique_report,
    technique_table,
    top_quartile,
)
from cudaopt.analysis.techniques import (
    TECHNIQUE_NAMES,
    forward_ops,
    source_views,
    tag_names,
    tag_source,
)
from cudaopt.db import CandidateRecord, ExemplarDB
from cudaopt.tasks.loader import CORPUS_DIR, Task, find_builtin


def cuda_candidate(cuda: str, forward: str = "return _ext.run(x)", extra_py: str = "") -> str:
    """A candidate in the corpus's shape: the CUDA text in a string passed to load_inline."""
    return f'''"""Docstring that talks about __shared__ memory, float4 loads and __shfl_xor_sync: not code."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
# a comment about wmma and cp.async: not code either
CUDA_SRC = r"""
{cuda}
"""
_ext = load_inline(name="t", cpp_sources="", cuda_sources=CUDA_SRC, functions=["run"])
{extra_py}

class ModelNew(nn.Module):
    def forward(self, x):
        {forward}
'''


PLAIN_KERNEL = "__global__ void k(float* y, const float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }"

# (tag, positive CUDA/C++ text, negative text that looks close)
CUDA_CASES = [
    ("custom_kernel", PLAIN_KERNEL, "__device__ float f(float v) { return v; }"),
    ("shared_memory", "__global__ void k() { __shared__ float tile[32][33]; }", "__global__ void k() { float tile[32]; } // __shared__ in a comment"),
    ("warp_shuffle", "v = __shfl_up_sync(0xffffffff, v, 1);", "/* __shfl_sync */ int shfl = 0;"),
    ("warp_reduction", "for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);",
     "float u = __shfl_up_sync(0xffffffff, v, 1);"),
    ("warp_reduction", "v = __reduce_add_sync(0xffffffff, v);", "v = __shfl_sync(0xffffffff, v, 0);"),
    ("block_reduction", "__shared__ float s[256]; for (int st = blockDim.x / 2; st > 0; st >>= 1) { if (tid < st) s[tid] += s[tid + st]; __syncthreads(); }",
     "__shared__ float s[256]; for (int o = 1; o < 256; o <<= 1) { s[t] += s[t - o]; __syncthreads(); }"),
    ("block_reduction", "__shared__ float red[32]; if (lane == 0) red[warp] = v; __syncthreads();",
     "__shared__ float red[32]; for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(~0u, v, o); __syncthreads();"),
    ("block_reduction", "typedef cub::BlockReduce<float, 256> BlockReduce;", "cub::DeviceReduce::Sum(p, b, x, y, n);"),
    ("vectorized_access", "float4 v = reinterpret_cast<const float4*>(x)[i];", "float3 v = make_float3(a, b, c); float v4x = 1;"),
    ("vectorized_access", "__half2 h = __hadd2(a, b);", "__half h = __hadd(a, b);"),
    ("tensor_cores", "wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;", "float mma = 0; // wmma::"),
    ("tensor_cores", 'asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 ..." );', 'const char* s = "mma sync";'),
    ("async_copy", 'asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(a), "l"(p));', "cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToDevice, st);"),
    ("async_copy", "__pipeline_memcpy_async(&s[i], &g[i], 16); __pipeline_commit();", "memcpy(dst, src, 16);"),
    ("cuda_graphs", "cudaGraphLaunch(exec, stream);", "cudaLaunchKernel(f, g, b, a, 0, s);"),
    ("loop_unrolling", "#pragma unroll\nfor (int i = 0; i < 4; ++i) acc += v[i];", "#pragma unroll 1\nfor (int i = 0; i < n; ++i) acc += v[i];"),
    ("grid_stride_loop", "for (int i = idx; i < n; i += gridDim.x * blockDim.x) y[i] = x[i];",
     "int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i];"),
    ("grid_stride_loop", "for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {}", "int row = blockIdx.x;"),
    ("read_only_cache", "float b = __ldg(&bias[c]);", "float b = bias[c];"),
    ("read_only_cache", "__global__ void k(const float* __restrict__ x, float* __restrict__ y) {}",
     "__global__ void k(float* __restrict__ y, const float* x) {}"),
    ("launch_bounds", "__global__ void __launch_bounds__(256, 2) k() {}", "__global__ void k() {} // __launch_bounds__(256)"),
    ("fast_math", "y = __expf(x) / (1.0f + __expf(x));", "y = expf(x) / (1.0f + expf(x));"),
    ("vendor_library", "cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &a, A, CUDA_R_16F, m, B, CUDA_R_16F, k, &b, C, CUDA_R_16F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);",
     "float cublas_like = 0;"),
    ("vendor_library", "auto y = torch::mm(x, w.t());", "auto y = torch::empty_like(x);"),
    ("side_streams", "cudaStream_t s; cudaStreamCreate(&s);", "cudaStream_t s = at::cuda::getCurrentCUDAStream();"),
]


@pytest.mark.parametrize("tag, pos, neg", CUDA_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CUDA_CASES)])
def test_cuda_text_tags(tag, pos, neg):
    assert tag in tag_names(cuda_candidate(pos)), pos
    assert tag not in tag_names(cuda_candidate(neg)), neg


PY_CASES = [
    ("cuda_graphs", "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    pass", "g = None  # torch.cuda.graph(g) would capture"),
    ("torch_compile", "fn = torch.compile(torch.relu)", "fn = torch.relu  # torch.compile(fn) was slower"),
    ("side_streams", "side = torch.cuda.Stream()", "cur = torch.cuda.current_stream()"),
]


@pytest.mark.parametrize("tag, pos, neg", PY_CASES, ids=[c[0] for c in PY_CASES])
def test_python_tags(tag, pos, neg):
    assert tag in tag_names(cuda_candidate(PLAIN_KERNEL, extra_py=pos))
    assert tag not in tag_names(cuda_candidate(PLAIN_KERNEL, extra_py=neg))


def test_prose_and_comments_are_not_code():
    """The docstring and comment of the template name several techniques; a plain kernel has none of them."""
    assert tag_names(cuda_candidate(PLAIN_KERNEL)) == {"custom_kernel"}


def test_fast_math_flag_in_python_strings():
    src = cuda_candidate(PLAIN_KERNEL).replace('functions=["run"]', 'functions=["run"], extra_cuda_cflags=["-O3", "--use_fast_math"]')
    assert "fast_math" in tag_names(src)


def test_raw_cuda_file_and_evidence_lines():
    cu = "// a .cu file\n#include <cuda_fp16.h>\n__global__ void k(half2* y) {\n  __shared__ half2 t[64];\n}\n"
    tags = {t.name: t for t in tag_source(cu)}
    assert set(tags) == {"custom_kernel", "shared_memory", "vectorized_access"}
    assert tags["shared_memory"].evidence == ("line 4: __shared__ half2 t[64];",)
    assert tags["vectorized_access"].count == 2
    assert tags["custom_kernel"].description and tags["custom_kernel"].to_dict()["name"] == "custom_kernel"


REF_THREE_OPS = '''import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x, bias):
        y = torch.sigmoid(x + bias)
        n = x.shape[0] * 2
        return y * x.view(n // 2, -1)
'''


def test_forward_ops_counts_compute_not_shapes():
    assert forward_ops(source_views(REF_THREE_OPS).tree, "Model") == ["add", "sigmoid", "mul"]
    assert forward_ops(source_views(REF_THREE_OPS).tree, "ModelNew") is None


def test_fusion_and_algebraic_simplification():
    fused = cuda_candidate(PLAIN_KERNEL, forward="return _ext.run(x.contiguous(), bias)")
    assert "fusion" in tag_names(fused, REF_THREE_OPS)
    assert "fusion" not in tag_names(fused)  # needs the reference
    partly = cuda_candidate(PLAIN_KERNEL, forward="return _ext.run(x) * torch.sigmoid(x + bias)")
    assert "fusion" not in tag_names(partly, REF_THREE_OPS)  # 4 ops >= 3: nothing fused away
    shortcut = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x, bias):\n        return torch.zeros_like(x)\n"
    tags = tag_names(shortcut, REF_THREE_OPS)
    assert "algebraic_simplification" in tags and "fusion" not in tags
    assert "algebraic_simplification" not in tag_names(fused, REF_THREE_OPS)  # compiled code is fusion's business
    compiled = "import torch\nclass ModelNew(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.f = torch.compile(torch.sigmoid)\n    def forward(self, x, bias):\n        return self.f(x)\n"
    assert tag_names(compiled, REF_THREE_OPS) == {"torch_compile"}


# Seed corpus files, hand-labelled from reading them.
CORPUS_LABELS = {
    "bias_sigmoid_mul/fast_fused_float4": ({"vectorized_access", "grid_stride_loop", "read_only_cache", "fusion"},
                                           {"shared_memory", "warp_shuffle", "tensor_cores"}),
    "softmax_rows/fast_row_cached": ({"shared_memory", "warp_shuffle", "warp_reduction", "block_reduction", "vectorized_access", "fusion"},
                                     {"grid_stride_loop", "async_copy", "fast_math"}),
    "rmsnorm_explicit/fast_row_cached": ({"warp_shuffle", "warp_reduction", "block_reduction", "vectorized_access"}, {"tensor_cores"}),
    "cumsum_rows/fast_block_scan": ({"warp_shuffle", "vectorized_access", "loop_unrolling", "launch_bounds"},
                                    {"warp_reduction", "fusion"}),  # a scan: __shfl_up, not a reduction; one reference op
    "cumsum_rows/honest_hillis_steele": ({"shared_memory"}, {"warp_shuffle", "block_reduction", "vectorized_access"}),
    "sum_reduce_rows/honest_thread_per_output": ({"custom_kernel"}, {"shared_memory", "warp_shuffle", "vectorized_access", "fusion"}),
    "softmax_rows/cpu_loop": (set(), {"custom_kernel", "fusion", "algebraic_simplification", "vectorized_access"}),
}


@pytest.mark.parametrize("name", sorted(CORPUS_LABELS))
def test_corpus_candidates(name):
    task, _ = name.split("/")
    want, not_want = CORPUS_LABELS[name]
    tags = tag_names((CORPUS_DIR / f"{name}.py").read_text(), find_builtin(task).source)
    assert want <= tags, want - tags
    assert not (not_want & tags), not_want & tags


def test_corpus_families():
    """Every fast_fused_float4 candidate is vectorised; every row_cached one reduces with warp shuffles."""
    for path in sorted(CORPUS_DIR.glob("*/fast_fused_float4.py")):
        assert "vectorized_access" in tag_names(path.read_text()), path
    row_cached = sorted(CORPUS_DIR.glob("*/fast_row_cached.py"))
    assert row_cached
    for path in row_cached:
        assert {"warp_shuffle", "warp_reduction"} <= tag_names(path.read_text()), path
    for path in sorted(CORPUS_DIR.glob("*/*.py")):  # honest corpus code never uses side streams
        assert "side_streams" not in tag_names(path.read_text()), path


# ----------------------------------------------------------------------------------------------------------
# Statistics and the report


def test_top_quartile_and_point_biserial_by_hand():
    assert top_quartile([4.0, 2.0, 1.0, 0.5]) == [True, False, False, False]
    assert top_quartile([1.0, 3.0, 3.0, 2.0, 0.1]) == [False, True, True, False, False]  # ceil(5/4) = 2
    assert top_quartile([2.0, 2.0, 1.0, 1.0]) == [True, True, False, False]  # tie at the edge
    x = np.array([1.0, 2.0, 3.0, 6.0])
    p = np.array([False, False, True, True])
    # Pearson of (0, 0, 1, 1) with x (mean 3): cov = (1 + 0.5 + 0 + 1.5) / 4 = 0.75, var(x) = 14 / 4, var(p) = 1/4
    assert point_biserial(x, p) == pytest.approx(0.75 / math.sqrt(3.5 * 0.25))
    assert point_biserial(x, p) == pytest.approx(np.corrcoef(p.astype(float), x)[0, 1])
    assert point_biserial(x, np.ones(4, dtype=bool)) is None
    # A constant within each group: every resample with both groups gives the same difference.
    lo, hi = bootstrap_interval(np.array([0.0, 0.0, 1.0, 1.0]), p, resamples=200, seed=1)
    assert lo == pytest.approx(1.0) and hi == pytest.approx(1.0)
    assert bootstrap_interval(x, np.array([True, False, False, False]), resamples=200, seed=1) is None


VEC = "__global__ void k(float4* y) { y[0] = y[1]; }"
VEC_SHFL = "__global__ void k(float4* y, float v) { v += __shfl_xor_sync(~0u, v, 1); y[0] = y[1]; }"
SHARED = "__global__ void k(float* y) { __shared__ float t[32]; y[0] = t[0]; }"
PLAIN = "__global__ void k(float* y) { y[0] = 1.0f; }"
REF_ONE_OP = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"


def _fill(db_path: Path) -> None:
    with ExemplarDB(db_path) as db:
        run = db.start_run("made-up", kind="suite")
        a = db.ensure_task(Task("task_a", 1, REF_ONE_OP))
        b = db.ensure_task(Task("task_b", 2, REF_ONE_OP + "# b\n"))

        def add(task_id, body, speedup, status="ok", tag=""):
            db.add_candidate(CandidateRecord(task_id=task_id, run_id=run.id, source=cuda_candidate(body) + tag,
                                             status=status, speedup=speedup))

        add(a, VEC_SHFL, 4.0)
        add(a, VEC, 2.0)
        add(a, PLAIN, 1.0)
        add(a, PLAIN, 0.5, tag="# other\n")
        add(a, VEC, None, status="incorrect", tag="# wrong\n")  # not ok: left out
        add(b, SHARED, 3.0)
        add(b, VEC, 1.4)
        add(b, VEC, 1.6)  # the same source again: one kernel at the median speedup, 1.5
        add(b, PLAIN, 1.0)


def test_report_numbers_by_hand(tmp_path):
    db_path = tmp_path / "runs.db"
    _fill(db_path)
    an = analyze_db(db_path, bootstrap=500, seed=3)
    assert len(an.kernels) == 7
    assert sorted(k.speedup for k in an.kernels if k.task == "task_b") == pytest.approx([1.0, 1.5, 3.0])
    assert [k.speedup for k in an.kernels if k.top] == [4.0, 3.0]

    ln2 = math.log(2.0)
    mb = (math.log(3.0) + math.log(1.5) + 0.0) / 3
    xa = [1.5 * ln2, 0.5 * ln2, -0.5 * ln2, -1.5 * ln2]  # task_a: log 4, 2, 1, 0.5 minus their mean ln2/2
    xb = [math.log(3.0) - mb, math.log(1.5) - mb, -mb]  # task_b: log 3, 1.5, 1 minus their mean
    eff = {e.technique: e for e in an.overall.effects}

    vec = eff["vectorized_access"]  # a: 4, 2 with; 1, 0.5 without. b: 1.5 with; 3, 1 without.
    assert (vec.n_with, vec.n_without, vec.tasks_mixed, vec.n_basis) == (3, 4, 2, 7)
    with_, without = [xa[0], xa[1], xb[1]], [xa[2], xa[3], xb[0], xb[2]]
    assert vec.diff == pytest.approx(sum(with_) / 3 - sum(without) / 4)
    assert vec.geomean_with == pytest.approx((4.0 * 2.0 * 1.5) ** (1 / 3))
    assert vec.geomean_without == pytest.approx((1.0 * 0.5 * 3.0 * 1.0) ** (1 / 4))
    allx = np.array(with_ + without)
    assert vec.r_pb == pytest.approx(vec.diff / allx.std() * math.sqrt(3 / 7 * 4 / 7))
    assert vec.ci_low <= vec.diff <= vec.ci_high

    shfl = eff["warp_shuffle"]  # only in task_a's fastest: the comparison uses task_a's four kernels
    assert (shfl.n_with, shfl.tasks_mixed, shfl.n_basis) == (1, 1, 4)
    assert shfl.diff == pytest.approx(xa[0] - (xa[1] + xa[2] + xa[3]) / 3) == pytest.approx(2 * ln2)
    assert shfl.ci_low is None  # one kernel with it: nothing to resample

    kern = eff["custom_kernel"]  # in every kernel: no comparison at all
    assert (kern.n_with, kern.n_without, kern.tasks_mixed, kern.diff, kern.r_pb) == (7, 0, 0, None, None)

    # Per level: the level-1 top quartile is task_a's fastest (vectorised and shuffling).
    lv1 = {p.technique: p for p in an.levels[0].prevalence}
    assert (lv1["vectorized_access"].top_with, lv1["vectorized_access"].top_n) == (1, 1)
    assert (lv1["vectorized_access"].rest_with, lv1["vectorized_access"].rest_n) == (1, 3)
    task_b = next(t for t in an.tasks if t.task == "task_b")
    assert task_b.best_speedup == 3.0 and task_b.best_tags == ("custom_kernel", "shared_memory")

    # Not centred: the raw log-speedups of all seven kernels.
    raw = {e.technique: e for e in analyze_db(db_path, within_task=False, bootstrap=0).overall.effects}
    logs_with = [math.log(v) for v in (4.0, 2.0, 1.5)]
    logs_without = [math.log(v) for v in (1.0, 0.5, 3.0, 1.0)]
    assert raw["vectorized_access"].diff == pytest.approx(sum(logs_with) / 3 - sum(logs_without) / 4)
    assert raw["vectorized_access"].ci_low is None  # bootstrap=0: no interval

    only_b = analyze_db(db_path, levels=[2], bootstrap=0)
    assert {k.task for k in only_b.kernels} == {"task_b"}


def test_report_files(tmp_path):
    db_path = tmp_path / "runs.db"
    _fill(db_path)
    md = technique_report(db_path, tmp_path / "out", bootstrap=200)
    text = md.read_text()
    assert md.name == "techniques.md"
    assert "## All levels (7 kernels, 2 tasks)" in text and "## Level 2 (3 kernels, 1 tasks)" in text
    assert "| vectorized_access | 50% (1/2) | 40% (2/5) | 3 / 4 |" in text
    assert "Not seen in any kernel:" in text and "tensor_cores" in text
    data = json.loads((tmp_path / "out" / "techniques.json").read_text())
    assert len(data["kernels"]) == 7 and set(data["kernels"][0]["tags"]) <= set(TECHNIQUE_NAMES)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        pass
    else:
        assert (tmp_path / "out" / "techniques.png").stat().st_size > 0
    table = technique_table(analyze_db(db_path, bootstrap=0))
    assert table.row_count == 5  # custom_kernel, shared_memory, warp_shuffle, warp_reduction, vectorized_access


def test_report_empty_and_missing_db(tmp_path):
    db_path = tmp_path / "empty.db"
    ExemplarDB(db_path).close()
    text = technique_report(db_path, tmp_path / "out", bootstrap=0).read_text()
    assert "No correct, timed kernels" in text
    with pytest.raises(FileNotFoundError, match="no such database"):
        technique_report(tmp_path / "nope.db", tmp_path / "out2")
