"""Static guards: honest snippets stay clean, each attack pattern is caught under its category."""

from __future__ import annotations

import textwrap

import pytest

from cudaopt.guards.findings import CATEGORIES, GuardPolicy, is_hint
from cudaopt.guards.static import scan

_KERNEL = '''
from torch.utils.cpp_extension import load_inline
_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void k(const float* x, float* y, long n) { long i = blockIdx.x * (long)blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }
torch::Tensor f(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "cuda only");
    auto y = torch::empty_like(x);
    k<<<(x.numel() + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    return y;
}
"""
_ext = load_inline(name="k", cpp_sources="torch::Tensor f(torch::Tensor x);", cuda_sources=_src, functions=["f"])
'''


def cand(body: str, *, kernel: bool = True, imports: str = "") -> str:
    """A complete candidate: imports, an optional honest kernel, and the given ModelNew body/extra code."""
    head = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n" + textwrap.dedent(imports)
    return head + (_KERNEL if kernel else "") + textwrap.dedent(body)


def categories(source: str, **kw) -> set[str]:
    return {f.category for f in scan(source, **kw)}


HONEST = {
    # once at construction the allocator's state biases no timed call
    "empty_cache_in_init": """
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                torch.cuda.empty_cache()
    """,
    # an operator of the candidate's own namespace is not the reference's
    "own_torch_library": '''
        _c = r"""
        TORCH_LIBRARY(myops, m) { m.def("lr(Tensor x) -> Tensor"); }
        TORCH_LIBRARY_IMPL(myops, CUDA, m) { m.impl("lr", lr); }
        """
    ''',
    "kernel_forward": """
        class ModelNew(nn.Module):
            def __init__(self, alpha):
                super().__init__()
                self.alpha = alpha
            def forward(self, x):
                b = x.size(0)
                y = torch.empty(b, x.shape[1], device=x.device)
                y = _ext.f(x.contiguous())
                return y
    """,
    "inplace_on_fresh_tensor": """
        class ModelNew(nn.Module):
            def forward(self, x, w):
                y = x @ w
                y.relu_()
                return x.mul(2.0).add_(1.0) + y.sum()
    """,
    "module_constants_and_arch_env": """
        import os
        os.environ["TORCH_CUDA_ARCH_LIST"] = "9.0"
        BLOCK_SIZE = 256
        class ModelNew(nn.Module):
            def __init__(self, in_features, out_features):
                super().__init__()
                self.linear = nn.Linear(in_features, out_features)
                self.cache_key = None
            def forward(self, x):
                n = x.shape[0]
                return F.relu(self.linear(x)) * (BLOCK_SIZE // BLOCK_SIZE)
    """,
    "narrow_import_fallback_and_torch_sync": """
        try:
            import triton
        except ImportError:
            triton = None
        import math
        class ModelNew(nn.Module):
            def forward(self, x):
                out = _ext.f(x)
                torch.cuda.synchronize()
                s = torch.cuda.current_stream()
                return out * math.sqrt(2.0)
    """,
    "local_names_like_modules": """
        class ModelNew(nn.Module):
            def forward(self, x):
                signal = x * 2
                time = signal.sum(dim=0)
                return _ext.f(signal) + time
    """,
    "float_cast_and_new_outputs": """
        class ModelNew(nn.Module):
            def forward(self, x):
                acc = torch.zeros(x.shape[0], device=x.device)
                acc += x.float().sum(dim=1)
                return acc.to(torch.float32)
    """,
}

ATTACKS = {
    "side_stream": [
        "s = torch.cuda.Stream()\n",
        "with torch.cuda.stream(torch.cuda.Stream()):\n    pass\n",
        "S = getattr(torch.cuda, 'Ext' + 'ernalStream')\n",
        "import threading\nthreading.Thread(target=print).start()\n",
        "from concurrent.futures import ThreadPoolExecutor\n",
        '_c = r"""\nvoid f() { cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); }\n"""\n',
        '_c = r"""\nvoid f() { cudaLaunchHostFunc(0, cb, nullptr); }\n"""\n',
    ],
    "lazy_output": [
        "class L(torch.Tensor):\n    pass\n",
        "class A:\n    @classmethod\n    def __torch_function__(cls, func, types, args=(), kwargs=None):\n        return func(*args)\n",
        "def f(x):\n    return torch.Tensor._make_subclass(object, x)\n",
        "class Thunk:\n    pass\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return Thunk()\n",
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return lambda: x * 2\n",
    ],
    "timer_tamper": [
        "import time\ntime.perf_counter = lambda: 0.0\n",
        "torch.cuda.synchronize = lambda *a: None\n",
        "setattr(torch.cuda.Event, 'elapsed' + '_time', lambda s, e: 0.0)\n",
        "import cudaopt.evaluate\n",
        "import importlib\nm = importlib.import_module('cuda' + 'opt')\n",
        "import sys\nsys.settrace(None)\n",
        "import builtins\nbuiltins.print = None\n",
        "torch.backends.cudnn.benchmark = True\n",
        "exec('import time\\ntime.perf_counter = lambda: 0')\n",
        '_c = r"""\nextern "C" cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {\n  return 0; }\n"""\n',
        # the reference's own operators and modules, slowed for it (session 61)
        "from torch.nn.modules import module as m\ngetattr(m, 'register_module_forward' + '_hook')(lambda *a: None)\n",
        "import torch.nn as nn\nnn.modules.module.register_module_forward_pre_hook(lambda m, a: None)\n",
        "lib = torch._C._dispatch_library('IMPL', 'aten', '')\n",
        '_c = r"""\nTORCH_LIBRARY_IMPL(aten, CUDA, m) { m.impl("relu", slow_relu); }\n"""\n',
        '_c = r"""\nTORCH_LIBRARY_IMPL(_, CPU, m) { m.fallback(torch::CppFunction::makeFallthrough()); }\n"""\n',
        '_c = r"""\n#define NS aten\nTORCH_LIBRARY_IMPL(NS, CUDA, m) { m.impl("relu", slow_relu); }\n"""\n',
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        y = x * 2\n        torch.cuda.empty_cache()\n        return y\n",
    ],
    "reference_peek": [
        "import gc\nobjs = gc.get_objects()\n",
        "import sys\nf = sys._getframe(1)\n",
        "torch._C._dynamo.eval_frame.set_eval_frame(lambda frame, *a: None)\n",
        "from torch._dynamo.eval_frame import set_eval_frame\n",
        "hook = getattr(torch._dynamo.eval_frame, 'set_' + 'eval_frame')\n",
        "import inspect\nf = inspect.currentframe()\n",
        "def f(fr):\n    return fr.f_back.f_locals\n",
        "import os\nv = os.environ.get('HOME')\n",
        "x = open('/tmp/ref.pt').read()\n",
        "r = torch.load('/dev/shm/out.pt')\n",
        "from multiprocessing import shared_memory\n",
        "blocks = torch.cuda.memory_snapshot()\n",
        "from torch.cuda import memory_snapshot\nb = memory_snapshot()\n",
        "st = torch._C._construct_storage_from_data_pointer(ptr, dev, n)\n",
        '_c = r"""\nauto s = c10::cuda::CUDACachingAllocator::snapshot();\n"""\n',
        "import reference_module\n",
        '_c = r"""\nvoid f() { const char* p = getenv("HOME"); }\n"""\n',
    ],
    "process_escape": [
        "import subprocess\n",
        "import os\nos.system('ls')\n",
        "import importlib\nsp = importlib.import_module('sub' + 'process')\n",
        "sp = __import__('sock' + 'et')\n",
        "import ctypes\nlib = ctypes.CDLL('libc.so.6')\n",
        "import shutil\nshutil.rmtree('/tmp/x')\n",
        "open('/home/user/x', 'w').write('x')\n",
        "import base64\nexec(base64.b64decode('cHJpbnQoMSk='))\n",
        '_c = r"""\nvoid f() { std::system("rm -rf /"); }\n"""\n',
        '_c = r"""\nvoid f() { FILE* p = popen("ls", "r"); }\n"""\n',
    ],
    "reference_inherit": [
        "class ModelNew(Model):\n    pass\n",
        "from reference import Model\n",
        "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.ref = Model()\n",
        "import ref\nclass ModelNew(ref.Model):\n    pass\n",
    ],
    "precision_downgrade": [
        "torch.backends.cuda.matmul.allow_tf32 = True\n",
        "torch.backends.cudnn.allow_tf32 = True\n",
        "torch.set_float32_matmul_precision('high')\n",
        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True\n",
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return (x.half() @ x.half().t()).float()\n",
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return x.to(torch.bfloat16).float()\n",
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        with torch.autocast('cuda'):\n            return x @ x\n",
    ],
    "result_cache": [
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        k = x.data_ptr()\n        return x\n",
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return self.c.get(id(x))\n",
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        v = x._version\n",
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        p = x.untyped_storage().data_ptr()\n",
        "_cache = {}\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        _cache[x.shape] = x\n",
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        self.n += 1\n",
        "import functools\n@functools.lru_cache\ndef f(k):\n    return k\n",
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        if x is self.last:\n            return self.out\n",
    ],
    "exception_fallback": [
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        try:\n            return _ext.f(x)\n        except Exception:\n            return x * 2\n",
        "try:\n    e = 1\nexcept:\n    e = None\n",
        "def helper(x):\n    try:\n        return _ext.f(x)\n    except RuntimeError:\n        return torch.relu(x)\n",
    ],
    "problem_changed": [
        "batch_size = 4\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x[:batch_size]\n",
        "def get_inputs():\n    return [torch.randn(2, 2)]\n",
        "def get_init_inputs():\n    return []\n",
    ],
    "no_custom_kernel": [],  # checked separately (needs kernel=False)
    "nondeterminism": ['_c = r"""\n__global__ void k(float* o, const float* x) { atomicAdd(o, x[threadIdx.x]); }\n"""\n'],
    "cache_state": ['_c = r"""\nvoid f(cudaStreamAttrValue a) { a.accessPolicyWindow.hitRatio = 1.0f; }\n"""\n'],
    "input_mutation": [
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        x.mul_(2)\n        return x * 1\n",
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        x[0] = 1\n        return x * 1\n",
        "class ModelNew(nn.Module):\n    def forward(self, x, y):\n        torch.add(x, y, out=x)\n        return y * 1\n",
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        x.view(-1).zero_()\n        return x * 1\n",
    ],
    "output_alias": [
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n",
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return self.buf\n",
    ],
    "degenerate_output": ["class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.zeros_like(x)\n"],
    "uninitialised_output": ["class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.empty_like(x)\n"],
    "input_exploit": [
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return x[:, ::4].mean(1)\n",
        "torch.manual_seed(0)\n",
    ],
    "drift": ["class ModelNew(nn.Module):\n    def forward(self, x):\n        self.calls += 1\n        if self.calls > 5:\n            return x * 0\n        return x * 1\n"],
}


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_snippet_is_clean(name):
    assert scan(cand(HONEST[name])) == []


@pytest.mark.parametrize("category,snippet", [(c, s) for c, ss in ATTACKS.items() for s in ss],
                         ids=[f"{c}-{i}" for c, ss in ATTACKS.items() for i, _ in enumerate(ss)])
def test_attack_snippet_is_caught(category, snippet):
    findings = scan(cand(snippet))
    assert category in {f.category for f in findings}, findings
    for f in findings:
        assert f.source == "static" and f.message and "\n" not in f.message and len(f.evidence) <= 170


def test_every_static_category_has_an_attack_snippet():
    assert set(ATTACKS) <= set(CATEGORIES)


def test_no_custom_kernel_only_on_cuda():
    body = "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
    assert "no_custom_kernel" in categories(cand(body, kernel=False), device="cuda")
    assert "no_custom_kernel" not in categories(cand(body, kernel=False), device="cpu")
    assert "no_custom_kernel" not in categories(cand(body), device="cuda")


def test_fp16_hints_depend_on_the_task_dtype_and_never_reject():
    snippet = '_c = r"""\n__global__ void k(__half* y) { y[0] = __float2half(1.f); }\n"""\n'
    fp32 = scan(cand(snippet))
    assert [f.category for f in fp32] == ["precision_downgrade"] and all(is_hint(f) for f in fp32)
    assert GuardPolicy().rejects(fp32) == [] and GuardPolicy.strict().rejects(fp32) == []
    fp16_task = "def get_inputs():\n    return [torch.randn(4, dtype=torch.float16)]\n"
    assert scan(cand(snippet), reference=fp16_task) == []


def test_reference_sizes_extend_the_size_names():
    body = "hidden = 8\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x[:hidden] * 1\n"
    assert "problem_changed" not in categories(cand(body))
    assert "problem_changed" in categories(cand(body), reference="hidden = 1024\n")


def test_comments_in_embedded_code_are_ignored_and_syntax_errors_are_empty():
    snippet = '_c = r"""\n// we do not call cudaStreamCreate here\n"""\n'
    assert scan(cand(snippet)) == []
    assert scan("def broken(:\n") == []


def test_evidence_names_the_line():
    (f,) = [f for f in scan(cand("import os\nos.system('ls')\n")) if f.category == "process_escape" and "shell" in f.message]
    assert f.evidence == "os.system('ls')"


def test_kernel_names_finds_kernels_wherever_launch_bounds_stands():
    # A corpus kernel written `__global__ void __launch_bounds__(N) name(...)` was once missed, so the
    # H200 kernel check called an honest candidate a fallback.
    from cudaopt.guards.static import kernel_names

    src = """
    __global__ void __launch_bounds__(256, 2) after_void(const float* x) {}
    __global__ __launch_bounds__(128) void before_void (float* y) {}
    template <int N> __global__ static void templated(float* z) {}
    extern "C" __global__ void plain(int n) {}
    __device__ float helper(float v) { return v; }
    """
    assert kernel_names(src) == {"after_void", "before_void", "templated", "plain"}


def test_reading_the_input_seed_is_an_input_exploit():
    from cudaopt.guards.static import scan

    src = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        seed = torch.initial_seed()\n        return x * 2\n"
    assert "input_exploit" in {f.category for f in scan(src, device="cpu")}
