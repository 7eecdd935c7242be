"""Built-in proposers: honest first candidates (and exemplars) when no LLM is configured.

Each writes a complete candidate file: a copy of the reference module (renamed `_ReferenceCopy`, the
harness's input functions removed), and a `ModelNew` with the reference's constructor arguments that
builds one `_ReferenceCopy` inside, so parameters are created in the same order from the same seed.
The speedup they earn is what torch.compile or CUDA-graph replay really buys over eager PyTorch.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from cudaopt.tasks.loader import Task

COPY_NAME = "_ReferenceCopy"
# Module-level names the harness reads from the reference; a candidate has no use for them.
_HARNESS_NAMES = {"get_inputs", "get_init_inputs", "SMALL", "TOLERANCE", "INPUT_DOMAIN", "LEVEL"}


@dataclass(frozen=True)
class Proposal:
    name: str  # stored as origin "proposer:<name>"
    source: str


class ProposerError(ValueError):
    """The reference cannot be wrapped (no `class Model`); one line saying why."""


class _RenameModel(ast.NodeTransformer):
    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id == "Model":
            node.id = COPY_NAME
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.ClassDef:
        if node.name == "Model":
            node.name = COPY_NAME
        self.generic_visit(node)
        return node


def _is_harness_stmt(node: ast.stmt) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return node.name in _HARNESS_NAMES
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return all(isinstance(t, ast.Name) and t.id in _HARNESS_NAMES for t in targets)
    return False


def reference_copy(source: str) -> tuple[str, str, str]:
    """(module text with Model renamed, ModelNew's parameter list, the call passing them through)."""
    tree = ast.parse(source)
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if model is None:
        raise ProposerError("the reference has no top-level `class Model`; built-in proposers wrap it")
    init = next((n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    params, call = "", ""
    if init is not None:
        args = init.args
        positional = args.posonlyargs + args.args
        args.posonlyargs, args.args = [], positional[1:]  # drop self; keep defaults aligned at the end
        params = ast.unparse(args)
        parts = [a.arg for a in positional[1:]]
        parts += [f"*{args.vararg.arg}"] if args.vararg else []
        parts += [f"{a.arg}={a.arg}" for a in args.kwonlyargs]
        parts += [f"**{args.kwarg.arg}"] if args.kwarg else []
        call = ", ".join(parts)
        tree = ast.parse(source)  # fresh tree: the edit above was only to render the parameter list
    tree.body = [n for n in tree.body if not _is_harness_stmt(n)]
    tree = ast.fix_missing_locations(_RenameModel().visit(tree))
    return ast.unparse(tree), params, call


_HEADER = '''# cudaopt built-in proposer: {name}
# {note}
import torch
import torch.nn as nn

# ---- a copy of the reference module (renamed; the harness's input functions removed) ----
{copy}

# ---- the candidate ----
'''

_COMPILE = '''
class ModelNew(nn.Module):
    def __init__(self{comma}{params}):
        super().__init__()
        self.inner = {copy_name}({call})
        # Kept outside the module tree so parameters are registered once, under `inner`.
        object.__setattr__(self, "_compiled", torch.compile(self.inner, mode={mode!r}, dynamic=False))

    def forward(self, *args):
        return self._compiled(*args)
'''

_CUDA_GRAPH = '''
class ModelNew(nn.Module):
    """Replays a CUDA graph of the reference's forward: static input buffers, copy-in, replay, clone-out.
    Any call the graph was not captured for (other shapes, dtypes, devices or non-tensor arguments,
    autograd enabled, CPU tensors) runs the eager forward instead."""

    def __init__(self{comma}{params}):
        super().__init__()
        self.inner = {copy_name}({call})
        self._graph = None
        self._graph_key = None
        self._static_in = None
        self._static_out = None

    @staticmethod
    def _key(args):
        return tuple(
            ("t", tuple(a.shape), a.dtype, a.device, a.stride()) if isinstance(a, torch.Tensor) else ("v", repr(a))
            for a in args
        )

    def _capture(self, args):
        self._static_in = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up outside capture, as torch.cuda.graphs recommends
            for _ in range(3):
                self.inner(*self._static_in)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self._static_out = self.inner(*self._static_in)
        self._graph, self._graph_key = graph, self._key(args)

    def forward(self, *args):
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        usable = tensors and all(t.is_cuda for t in tensors) and not torch.is_grad_enabled()
        if not usable:
            return self.inner(*args)
        if self._graph is None or self._graph_key != self._key(args):
            self._capture(args)
        for buf, a in zip(self._static_in, args):
            if isinstance(a, torch.Tensor):
                buf.copy_(a)
        self._graph.replay()
        out = self._static_out
        if isinstance(out, torch.Tensor):
            return out.clone()
        return type(out)(o.clone() if isinstance(o, torch.Tensor) else o for o in out)
'''

# name -> (template, torch.compile mode, needs CUDA, note)
PROPOSERS = {
    "compile": (_COMPILE, "default", False, "torch.compile of the reference forward (default mode)"),
    "compile-max-autotune": (_COMPILE, "max-autotune-no-cudagraphs", False, "torch.compile, mode max-autotune-no-cudagraphs"),
    "compile-reduce-overhead": (_COMPILE, "reduce-overhead", True, "torch.compile, mode reduce-overhead (CUDA graphs inside)"),
    "cuda-graph": (_CUDA_GRAPH, None, True, "CUDA-graph capture and replay of the eager forward"),
}
DEFAULT_PROPOSERS = ("compile", "compile-max-autotune", "cuda-graph")


def propose(task: Task, name: str) -> Proposal:
    if name not in PROPOSERS:
        raise ProposerError(f"unknown proposer {name!r}; choose from {', '.join(PROPOSERS)}")
    template, mode, _, note = PROPOSERS[name]
    copy, params, call = reference_copy(task.source)
    body = template.format(comma=", " if params else "", params=params, call=call, copy_name=COPY_NAME, mode=mode)
    return Proposal(name, _HEADER.format(name=name, note=note, copy=copy) + body)


def builtin_proposals(task: Task, device: str, names: tuple[str, ...] | None = None) -> list[Proposal]:
    """The proposals that make sense on `device` (CUDA-only ones are left out on the CPU)."""
    on_cuda = device.startswith("cuda")
    chosen = DEFAULT_PROPOSERS if names is None else names
    return [propose(task, n) for n in chosen if on_cuda or not PROPOSERS[n][2]]
