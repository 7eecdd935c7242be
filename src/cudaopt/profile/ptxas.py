"""The cheap fallback that needs no GPU: the compiler's resource report (`nvcc -Xptxas -v`).

The candidate's CUDA source is read from its `load_inline(cuda_sources=...)` call without running the
file (module-level string constants, concatenations and lists of them), compiled for one architecture
with ptxas verbose output, and the output parsed per kernel: registers, shared memory, spills, stack.

Only the device half is compiled (`nvcc -cubin`): ptxas sees the same code as under `-c`, but the host
compiler never parses torch's headers a second time, which was most of the cost (a candidate that
includes <torch/extension.h>: 163 s with `-c`, 62 s with `-cubin` on a 2-core CPU machine, same report).
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sysconfig
import tempfile
from pathlib import Path

from cudaopt.profile.report import KernelResources

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[\d+\]")
# load_inline flags that change code generation; anything else (paths, -arch) is left to us.
_KEEP_FLAG = re.compile(r"^(-O\d|--use_fast_math|-use_fast_math|-D\S+|-U\S+|--expt-\S+|-std=\S+|--ftz=\S+|--prec-\S+|--fmad=\S+)$")


def parse_ptxas(text: str) -> list[KernelResources]:
    """Entry functions (kernels) in the order ptxas compiled them. Device functions that ptxas reports
    separately carry no `Used N registers` line and are left out."""
    kernels: dict[str, dict] = {}
    frames: dict[str, tuple[int, int, int]] = {}
    current: str | None = None
    props_for: str | None = None
    for line in text.splitlines():
        if m := _ENTRY.search(line):
            current = m.group(1)
            kernels.setdefault(current, {"arch": m.group(2)})
        elif m := _PROPS.search(line):
            props_for = m.group(1)
        elif m := _FRAME.search(line):
            if props_for:
                frames[props_for] = tuple(int(x) for x in m.groups())
        elif (m := _USED.search(line)) and current is not None:
            k = kernels[current]
            k["registers"] = int(m.group(1))
            if b := _BARRIERS.search(line):
                k["barriers"] = int(b.group(1))
            if s := _SMEM.search(line):
                k["shared_bytes"] = int(s.group(1))
            k["constant_bytes"] = sum(int(c) for c in _CMEM.findall(line))
    out = []
    names = demangle(list(kernels))
    for name, k in kernels.items():
        if "registers" not in k:
            continue
        frame, spill_st, spill_ld = frames.get(name, (0, 0, 0))
        out.append(KernelResources(name=name, display_name=names.get(name, name), arch=k["arch"], registers=k["registers"],
                                   shared_bytes=k.get("shared_bytes", 0), constant_bytes=k.get("constant_bytes", 0),
                                   stack_frame_bytes=frame, spill_store_bytes=spill_st, spill_load_bytes=spill_ld,
                                   barriers=k.get("barriers", 0)))
    return out


def demangle(names: list[str]) -> dict[str, str]:
    """Mangled -> readable via c++filt where it is installed; the names unchanged otherwise."""
    tool = shutil.which("c++filt")
    if not names or tool is None:
        return {n: n for n in names}
    try:
        out = subprocess.run([tool], check=False, input="\n".join(names), capture_output=True, text=True, timeout=10).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return {n: n for n in names}
    return dict(zip(names, out)) if len(out) == len(names) else {n: n for n in names}


# -- reading the CUDA source out of a candidate -----------------------------------------------------------
def _strings(node: ast.AST, env: dict[str, ast.AST], depth: int = 0) -> list[str] | None:
    """The string(s) an expression denotes, following module-level names; None when not static."""
    if depth > 20:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Name) and node.id in env:
        return _strings(env[node.id], env, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _strings(node.left, env, depth + 1), _strings(node.right, env, depth + 1)
        if left is not None and right is not None and len(left) == 1 and len(right) == 1:
            return [left[0] + right[0]]
        return None
    if isinstance(node, (ast.List, ast.Tuple)):
        parts = [_strings(e, env, depth + 1) for e in node.elts]
        return None if any(p is None for p in parts) else [s for p in parts for s in p]
    return None


def extract_cuda_sources(candidate_source: str) -> tuple[list[str], list[str]]:
    """(CUDA sources, code-generation flags) from every `load_inline(...)` call whose arguments are
    static strings. Nothing is executed."""
    try:
        tree = ast.parse(candidate_source)
    except SyntaxError:
        return [], []
    env: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            env[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            env[node.target.id] = node.value
    sources: list[str] = []
    flags: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
        if name != "load_inline":
            continue
        for kw in node.keywords:
            if kw.arg == "cuda_sources":
                sources += _strings(kw.value, env) or []
            elif kw.arg == "extra_cuda_cflags":
                flags += [f for f in (_strings(kw.value, env) or []) if _KEEP_FLAG.match(f)]
    return sources, flags


def _uses_torch(cuda_source: str) -> bool:
    return bool(re.search(r"\btorch::|\bat::|\bc10::|TORCH_|<torch/|<ATen/|<c10/", cuda_source))


def torch_include_flags() -> list[str]:
    """Include paths for torch's headers and Python's, found without CUDA_HOME (CPU builds included)."""
    import torch

    root = Path(torch.__file__).parent / "include"
    return [f"-I{p}" for p in (root, root / "torch" / "csrc" / "api" / "include", sysconfig.get_paths()["include"])]


def find_nvcc(nvcc: str | None = None) -> str | None:
    if nvcc:
        return nvcc if Path(nvcc).exists() or shutil.which(nvcc) else None
    for cand in (os.environ.get("CUDA_HOME") and str(Path(os.environ["CUDA_HOME"]) / "bin" / "nvcc"), shutil.which("nvcc"),
                 "/usr/local/cuda/bin/nvcc"):
        if cand and Path(cand).exists():
            return cand
    return None


def ptxas_command(tool: str, cu: Path, out: Path, *, arch: str, extra: list[str], flags: list[str],
                  device_only: bool = True) -> list[str]:
    """`-cubin`: device code only (what ptxas reports on); `-c` would also run the host compiler."""
    return [tool, f"-arch={arch}", "-std=c++17", "-cubin" if device_only else "-c", "-Xptxas", "-v", *extra, *flags,
            str(cu), "-o", str(out)]


def compile_resources(cuda_source: str, *, arch: str = "sm_90a", nvcc: str | None = None, flags: list[str] | None = None,
                      timeout_s: float = 300.0, device_only: bool = True) -> tuple[list[KernelResources], str]:
    """Compile one CUDA source with `-Xptxas -v`; (kernels, "") or ([], why not)."""
    tool = find_nvcc(nvcc)
    if tool is None:
        return [], "nvcc not found; install the CUDA toolkit or set CUDA_HOME"
    src = cuda_source
    extra: list[str] = []
    if _uses_torch(cuda_source):
        # load_inline puts these first in every CUDA source; the torch headers need C++17 and the ABI flag.
        import torch

        src = "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n" + cuda_source
        extra = [*torch_include_flags(), "-DTORCH_EXTENSION_NAME=cudaopt_ptxas", "-DTORCH_API_INCLUDE_EXTENSION_H",
                 f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}", "--expt-relaxed-constexpr"]
    with tempfile.TemporaryDirectory(prefix="cudaopt-ptxas-") as tmp:
        cu = Path(tmp) / "candidate.cu"
        cu.write_text(src)
        out = Path(tmp) / ("c.cubin" if device_only else "c.o")
        cmd = ptxas_command(tool, cu, out, arch=arch, extra=extra, flags=list(flags or []), device_only=device_only)
        try:
            proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return [], f"nvcc took longer than {timeout_s:.0f} s"
        except OSError as e:
            return [], f"nvcc could not start: {e}"
    text = proc.stdout + proc.stderr
    if proc.returncode != 0:
        first = next((ln for ln in text.splitlines() if "error" in ln), text.strip().splitlines()[-1] if text.strip() else "")
        return parse_ptxas(text), f"nvcc failed (exit {proc.returncode}): {first.strip()[:300]}"
    return parse_ptxas(text), ""


def ptxas_resources(candidate_source: str, *, arch: str = "sm_90a", nvcc: str | None = None,
                    timeout_s: float = 300.0) -> tuple[str, str, list[KernelResources]]:
    """(status, reason, kernels) for a candidate file's text: status ok | no_cuda_source | missing | failed."""
    sources, flags = extract_cuda_sources(candidate_source)
    if not sources:
        return "no_cuda_source", "no load_inline(cuda_sources=...) with static strings in the candidate", []
    if find_nvcc(nvcc) is None:
        return "missing", "nvcc not found; install the CUDA toolkit or set CUDA_HOME", []
    kernels: list[KernelResources] = []
    for src in sources:
        got, why = compile_resources(src, arch=arch, nvcc=nvcc, flags=flags, timeout_s=timeout_s)
        kernels += got
        if why:
            return "failed", why, kernels
    return "ok", "", kernels
