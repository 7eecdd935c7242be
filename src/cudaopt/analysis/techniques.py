"""Tag a kernel's source with the optimisation techniques it uses.

Detection is static and cheap: regular expressions over two views of the candidate, plus an AST count of
the operations in `forward` for the two techniques that compare a candidate with its reference.

- The C++/CUDA view is the text of the Python string literals (where `load_inline` sources live), with C
  comments blanked; docstrings and bare string statements are left out. A file that is not Python (a raw
  .cu file) is all C++/CUDA.
- The Python view is the Python code with comments and string literals blanked.

Both views keep every character's offset, so evidence names the line of the original source. What each
tag detects, and its known false positives and negatives, is in docs/techniques.md.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable, Iterable
from dataclasses import dataclass

MAX_EVIDENCE = 3  # matches quoted per tag; the count says how many there were in all
_EVIDENCE_CHARS = 120

# Stored tags carry this; raise it whenever a detector changes, so stored tags are computed again.
TAGGER_VERSION = 1


@dataclass(frozen=True)
class Tag:
    """One technique found in a source: its name, what it means, and the lines that show it."""

    name: str
    description: str
    evidence: tuple[str, ...]  # "line N: <source line>" (or a sentence for the AST-based tags)
    count: int = 0  # matches in all (evidence quotes at most MAX_EVIDENCE of them)

    def to_dict(self) -> dict:
        return {"name": self.name, "description": self.description, "evidence": list(self.evidence), "count": self.count}


# ----------------------------------------------------------------------------------------------------------
# Source views


@dataclass(frozen=True)
class SourceViews:
    original: str
    cuda: str  # C++/CUDA text, everything else blanked (offsets preserved)
    python: str  # Python code, comments and strings blanked (offsets preserved)
    is_python: bool
    tree: ast.Module | None

    def line_of(self, offset: int) -> int:
        return self.original.count("\n", 0, offset) + 1

    def quote(self, offset: int) -> str:
        start = self.original.rfind("\n", 0, offset) + 1
        end = self.original.find("\n", offset)
        text = self.original[start: end if end >= 0 else len(self.original)].strip()
        if len(text) > _EVIDENCE_CHARS:
            text = text[: _EVIDENCE_CHARS - 3] + "..."
        return f"line {self.line_of(offset)}: {text}"


_C_COMMENT_RE = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def _blank(text: str) -> str:
    """Spaces for every character but newlines, so offsets and line numbers survive."""
    return re.sub(r"[^\n]", " ", text)


def _blank_c_comments(text: str) -> str:
    return _C_COMMENT_RE.sub(lambda m: _blank(m.group(0)), text)


def source_views(source: str) -> SourceViews:
    try:
        tree = ast.parse(source)
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (SyntaxError, tokenize.TokenError, ValueError):
        return SourceViews(source, _blank_c_comments(source), _blank(source), False, None)

    line_starts = [0]
    for line in source.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))

    def offset(pos: tuple[int, int]) -> int:
        return line_starts[pos[0] - 1] + pos[1]

    # Bare string statements (docstrings) describe the code in prose: not part of the C++ view.
    prose = {(n.value.lineno, n.value.col_offset) for n in ast.walk(tree)
             if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)}
    fstring_start = getattr(tokenize, "FSTRING_START", None)  # Python 3.12 splits f-strings into tokens
    fstring_end = getattr(tokenize, "FSTRING_END", None)
    string_spans: list[tuple[int, int, bool]] = []  # (start, end, is_code)
    comment_spans: list[tuple[int, int]] = []
    open_fstring: tuple[int, int] | None = None
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            comment_spans.append((offset(tok.start), offset(tok.end)))
        elif tok.type == tokenize.STRING and open_fstring is None:
            string_spans.append((offset(tok.start), offset(tok.end), tok.start not in prose))
        elif fstring_start is not None and tok.type == fstring_start and open_fstring is None:
            open_fstring = tok.start
        elif fstring_end is not None and tok.type == fstring_end and open_fstring is not None:
            string_spans.append((offset(open_fstring), offset(tok.end), open_fstring not in prose))
            open_fstring = None

    cuda = [" " if ch != "\n" else "\n" for ch in source]
    python = list(source)
    for start, end, is_code in string_spans:
        if is_code:
            cuda[start:end] = source[start:end]
        python[start:end] = _blank(source[start:end])
    for start, end in comment_spans:
        python[start:end] = _blank(source[start:end])
    return SourceViews(source, _blank_c_comments("".join(cuda)), "".join(python), True, tree)


# ----------------------------------------------------------------------------------------------------------
# Operation counts in forward (for fusion and algebraic simplification)

# Calls that move no data through arithmetic: shape queries, views, casts, allocation.
_NON_COMPUTE_METHODS = frozenset(
    ["size", "dim", "numel", "stride", "view", "view_as", "reshape", "contiguous", "unsqueeze", "squeeze", "flatten", "unflatten", "permute", "transpose", "t", "expand", "expand_as", "to", "type", "float", "half", "double", "bfloat16", "is_contiguous", "data_ptr", "detach", "empty", "empty_like", "new_empty", "get_device", "item", "tolist"])
_PY_BUILTINS = frozenset(["len", "int", "float", "bool", "range", "isinstance", "super", "tuple", "list", "dict", "print", "getattr", "hasattr", "min", "max", "abs", "sum", "zip", "enumerate", "str", "type", "any", "all", "round"])
_SHAPE_ATTRS = frozenset({"shape", "ndim", "dtype", "device", "training"})


def _callee_name(func: ast.AST) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _is_scalar(node: ast.AST, names: frozenset[str] = frozenset()) -> bool:
    """An expression over constants, shape queries and `names` (locals holding such values): Python
    arithmetic, not a tensor op."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Attribute):
        return node.attr in _SHAPE_ATTRS
    if isinstance(node, ast.Subscript):
        return _is_scalar(node.value, names)
    if isinstance(node, ast.Call):
        return _callee_name(node.func) in {"size", "dim", "numel", "stride", "len", "int", "float", "item"}
    if isinstance(node, ast.BinOp):
        return _is_scalar(node.left, names) and _is_scalar(node.right, names)
    if isinstance(node, ast.UnaryOp):
        return _is_scalar(node.operand, names)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_is_scalar(e, names) for e in node.elts)
    return False


def _scalar_locals(fn: ast.AST) -> frozenset[str]:
    """Local names assigned only from scalar expressions (e.g. `n = x.shape[0] * 2`), to a fixed point."""
    assigns = [n for n in ast.walk(fn) if isinstance(n, ast.Assign)]
    names: frozenset[str] = frozenset()
    while True:
        grown = set(names)
        for a in assigns:
            if _is_scalar(a.value, names):
                for t in a.targets:
                    for leaf in ast.walk(t):
                        if isinstance(leaf, ast.Name):
                            grown.add(leaf.id)
        if grown == names:
            return names
        names = frozenset(grown)


_OP_SYMBOLS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.MatMult: "matmul",
               ast.Pow: "pow", ast.FloorDiv: "floordiv", ast.Mod: "mod"}


def forward_ops(tree: ast.Module | None, class_name: str) -> list[str] | None:
    """The compute operations `class_name.forward` performs, by name; None when there is no such method.

    Counted: calls other than shape/view/cast/allocation calls and Python builtins, tensor arithmetic
    (binary, augmented, unary minus) and comparisons. A call into a compiled extension counts as one.
    """
    if tree is None:
        return None
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name), None)
    fwd = None if cls is None else next(
        (n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "forward"), None)
    if fwd is None:
        return None
    scalars = _scalar_locals(fwd)
    sc = lambda node: _is_scalar(node, scalars)
    ops: list[tuple[int, int, str]] = []  # (end line, end column, name): inner ops end first
    for node in ast.walk(fwd):
        if isinstance(node, ast.Call):
            name = _callee_name(node.func)
            bare_builtin = isinstance(node.func, ast.Name) and name in _PY_BUILTINS
            if name and not bare_builtin and name not in _NON_COMPUTE_METHODS:
                ops.append((node.end_lineno, node.end_col_offset, name))
        elif isinstance(node, ast.BinOp) and type(node.op) in _OP_SYMBOLS:
            if not (sc(node.left) and sc(node.right)):
                ops.append((node.end_lineno, node.end_col_offset, _OP_SYMBOLS[type(node.op)]))
        elif isinstance(node, ast.AugAssign) and type(node.op) in _OP_SYMBOLS:
            if not (sc(node.target) and sc(node.value)):
                ops.append((node.end_lineno, node.end_col_offset, _OP_SYMBOLS[type(node.op)]))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and not sc(node.operand):
            ops.append((node.end_lineno, node.end_col_offset, "neg"))
        elif isinstance(node, ast.Compare) and not all(sc(x) for x in [node.left, *node.comparators]):
            ops.append((node.end_lineno, node.end_col_offset, "compare"))
    return [name for _, _, name in sorted(ops)]


# ----------------------------------------------------------------------------------------------------------
# Detectors


@dataclass(frozen=True)
class _Context:
    views: SourceViews
    reference: SourceViews | None
    found: dict  # name -> Tag, for detectors that build on earlier tags


Detector = Callable[[_Context], tuple[list[str], int]]


def _matches(views: SourceViews, patterns: Iterable[tuple[str, re.Pattern]]) -> tuple[list[str], int]:
    """Evidence lines (deduplicated, in source order) and the number of matches."""
    hits: dict[int, str] = {}
    count = 0
    for where, rx in patterns:
        text = views.cuda if where == "cuda" else views.python
        for m in rx.finditer(text):
            count += 1
            line = views.line_of(m.start())
            if line not in hits:
                hits[line] = views.quote(m.start())
    return [hits[k] for k in sorted(hits)][:MAX_EVIDENCE], count


def _rx(*patterns: str, where: str = "cuda", flags: int = 0) -> list[tuple[str, re.Pattern]]:
    return [(where, re.compile(p, flags)) for p in patterns]


def _regex(patterns: list[tuple[str, re.Pattern]]) -> Detector:
    return lambda ctx: _matches(ctx.views, patterns)


_GLOBAL_KERNEL = _rx(r"\b__global__\b")
_COMPILED_CODE_PY = _rx(r"\bload_inline\s*\(", r"\bcpp_extension\b", r"\bload\s*\(\s*name\s*=", where="python")

_SHARED = _rx(r"\b__shared__\b")
_WARP_SHUFFLE = _rx(r"\b__shfl(?:_xor|_down|_up)?(?:_sync)?\s*\(", r"\.shfl(?:_xor|_down|_up)?\s*\(")
_WARP_REDUCTION = _rx(r"\b__shfl_(?:xor|down)(?:_sync)?\s*\(", r"\.shfl_(?:xor|down)\s*\(",
                      r"\b__reduce_(?:add|min|max|and|or|xor)_sync\s*\(", r"\b(?:cg|cooperative_groups)::reduce\s*\(",
                      r"\bWarpReduce\b")
_CUB_BLOCK_REDUCE = _rx(r"\bBlockReduce\s*<")
_SYNCTHREADS = _rx(r"\b__syncthreads\s*\(")
_BLOCK_LEADERS = _rx(r"\b\w*lane\w*\s*==\s*0\b",  # warp leaders write their partial to shared memory
                     r"threadIdx\.x\s*(?:%\s*(?:32|warpSize)|&\s*31)\s*\)?\s*==\s*0", flags=re.IGNORECASE)
_TREE_HALVING = re.compile(r"\b\w+\s*>>=\s*1\b|\b\w+\s*/=\s*2\b")
_VECTOR = _rx(r"\b(?:float[24]|double2|__half2|half2|__nv_bfloat162|nv_bfloat162|u?int[24]|u?char4|u?short[24]|longlong2)\b",
              r"\b__h(?:add|sub|mul|fma|max|min|neg)2\s*\(", r"\bld\.(?:global|shared)(?:\.\w+)*\.v[248]\b",
              r"\bst\.(?:global|shared)(?:\.\w+)*\.v[248]\b")
_TENSOR_CORES = _rx(r"\bwmma::", r"\bnvcuda::wmma\b", r"\bmma_sync\s*\(", r"\bmma\.sync\b", r"\bwgmma\b", r"\bHMMA\b",
                    r"\b__hmma\w*", r"\bldmatrix\b", r"\bSM[789]0_\d+x\d+x\d+_\w+", r"\bMMA_Atom\b", r"\bTiledMMA\b",
                    r"\btcgen05\.mma\b", r"\bOpClassTensorOp\b")
_ASYNC_COPY = _rx(r"\bcp\.async\b", r"\b__pipeline_memcpy_async\b", r"\b__pipeline_(?:commit|wait_prior)\b",
                  r"\b(?:cuda|cooperative_groups|cg)::memcpy_async\b", r"\bcuda::pipeline\b", r"\bSM80_CP_ASYNC\w*",
                  r"\bSM90_TMA\w*", r"\bcuTensorMapEncode\w*", r"\bcp_async\w*\s*\(")
_GRAPHS = (_rx(r"\btorch\.cuda\.graph\s*\(", r"\bCUDAGraph\b", r"\bmake_graphed_callables\b", where="python")
           + _rx(r"\bcudaGraph\w*\s*\(", r"\bcudaStreamBeginCapture\b", r"\bCUDAGraph\b"))
_UNROLL = _rx(r"#\s*pragma\s+unroll(?!\s+1\b)", r"\bCUTLASS_PRAGMA_UNROLL\b")
_GRID_STRIDE = _rx(r"\bgridDim\.[xyz]\s*\*\s*blockDim\.[xyz]\b", r"\bblockDim\.[xyz]\s*\*\s*gridDim\.[xyz]\b",
                   r"\+=\s*gridDim\.[xyz]\b")
_READ_ONLY = _rx(r"\b__ldg\s*\(", r"\bconst\b[^;(){},=]{0,80}?\*\s*(?:const\s+)?__restrict__\b", r"\bld\.global\.nc\b")
_LAUNCH_BOUNDS = _rx(r"\b__launch_bounds__\s*\(", r"\b__maxnreg__\s*\(")
_FAST_MATH = _rx(r"-?-use_fast_math\b",
                 r"\b__(?:expf|exp10f|logf|log2f|log10f|sinf|cosf|tanf|powf|fdividef|saturatef)\s*\(")
_VENDOR = _rx(r"\bcublas\w*\s*\(", r"\b(?:torch|at)::(?:mm|bmm|matmul|addmm|baddbmm|linear|conv\w*|cudnn\w*)\s*\(", r"\bcublasLt\w*", r"\bcudnn\w*\s*\(", r"\bcutlass::", r"\bcute::")
_TORCH_COMPILE = _rx(r"\btorch\.compile\s*\(", r"@torch\.compile\b", r"\btorch\._dynamo\b", r"\btorch\._inductor\b",
                     where="python")
_STREAMS = (_rx(r"\btorch\.cuda\.Stream\s*\(", r"\btorch\.cuda\.stream\s*\(", r"\btorch\.cuda\.ExternalStream\b",
                where="python")
            + _rx(r"\bcudaStreamCreate\w*\s*\(", r"\bgetStreamFromPool\s*\("))


def _has_compiled_code(views: SourceViews) -> bool:
    return bool(_matches(views, _GLOBAL_KERNEL)[1] or _matches(views, _COMPILED_CODE_PY)[1] or not views.is_python)


def _tree_halving(views: SourceViews) -> list[str]:
    """Halving-stride loops outside warp-shuffle lines (those are warp reductions, tagged on their own)."""
    out = []
    for m in _TREE_HALVING.finditer(views.cuda):
        start = views.cuda.rfind("\n", 0, m.start()) + 1
        end = views.cuda.find("\n", m.end())
        if "shfl" not in views.cuda[start: end if end >= 0 else None]:
            out.append(views.quote(m.start()))
    return out


def _block_reduction(ctx: _Context) -> tuple[list[str], int]:
    cub, n_cub = _matches(ctx.views, _CUB_BLOCK_REDUCE)
    if n_cub:
        return cub, n_cub
    shared, n_shared = _matches(ctx.views, _SHARED)
    _, n_sync = _matches(ctx.views, _SYNCTHREADS)
    leaders, n_leaders = _matches(ctx.views, _BLOCK_LEADERS)
    tree = _tree_halving(ctx.views)
    if n_shared and n_sync and (n_leaders or tree):
        evidence = list(dict.fromkeys(leaders + tree + shared[:1]))
        return evidence[:MAX_EVIDENCE], n_leaders + len(tree)
    return [], 0


def _ops_evidence(ctx: _Context) -> tuple[list[str], list[str]] | None:
    if ctx.reference is None:
        return None
    ref_ops = forward_ops(ctx.reference.tree, "Model")
    cand_ops = forward_ops(ctx.views.tree, "ModelNew")
    if ref_ops is None or cand_ops is None:
        return None
    return ref_ops, cand_ops


def _describe_ops(ops: list[str]) -> str:
    return f"{len(ops)} op{'s' if len(ops) != 1 else ''}" + (f" ({', '.join(ops[:8])}{', ...' if len(ops) > 8 else ''})" if ops else "")


def _fusion(ctx: _Context) -> tuple[list[str], int]:
    ops = _ops_evidence(ctx)
    if ops is None or "custom_kernel" not in ctx.found:
        return [], 0
    ref_ops, cand_ops = ops
    if len(ref_ops) >= 3 and len(cand_ops) < len(ref_ops):
        return [(f"reference forward: {_describe_ops(ref_ops)}; candidate forward: {_describe_ops(cand_ops)}, "
                f"with {ctx.found['custom_kernel'].count} __global__ kernel(s)")], 1
    return [], 0


def _algebraic(ctx: _Context) -> tuple[list[str], int]:
    ops = _ops_evidence(ctx)
    if ops is None or _has_compiled_code(ctx.views) or {"torch_compile", "cuda_graphs"} & set(ctx.found):
        return [], 0
    ref_ops, cand_ops = ops
    if len(cand_ops) < len(ref_ops):
        return [(f"reference forward: {_describe_ops(ref_ops)}; candidate forward: {_describe_ops(cand_ops)}, "
                "no compiled code")], 1
    return [], 0


@dataclass(frozen=True)
class Technique:
    name: str
    description: str
    detect: Detector
    needs_reference: bool = False


# Catalogue order is report order. Detectors that read `found` come after the tags they read.
TECHNIQUES: tuple[Technique, ...] = (
    Technique("custom_kernel", "defines its own CUDA kernel (__global__)", _regex(_GLOBAL_KERNEL)),
    Technique("shared_memory", "stages data in shared memory (__shared__): tiles, cached rows or reduction scratch",
              _regex(_SHARED)),
    Technique("warp_shuffle", "exchanges registers between lanes with warp shuffles (__shfl_*_sync)", _regex(_WARP_SHUFFLE)),
    Technique("warp_reduction", "reduces across a warp (xor/down shuffles, __reduce_*_sync, cg::reduce)",
              _regex(_WARP_REDUCTION)),
    Technique("block_reduction", "reduces across a thread block through shared memory (tree or warp partials, cub::BlockReduce)",
              _block_reduction),
    Technique("vectorized_access", "wide loads/stores or packed math (float4, half2, int4, .v4 PTX, __hadd2 ...)", _regex(_VECTOR)),
    Technique("tensor_cores", "uses tensor cores directly (WMMA, mma.sync, wgmma, ldmatrix, CuTe MMA atoms)", _regex(_TENSOR_CORES)),
    Technique("async_copy", "asynchronous global-to-shared copies (cp.async, memcpy_async, pipelines, TMA)", _regex(_ASYNC_COPY)),
    Technique("cuda_graphs", "captures and replays work as a CUDA graph (torch.cuda.graph, CUDAGraph, cudaGraphLaunch)",
              _regex(_GRAPHS)),
    Technique("loop_unrolling", "asks the compiler to unroll loops (#pragma unroll)", _regex(_UNROLL)),
    Technique("grid_stride_loop", "grid-stride loops: a fixed grid whose threads or blocks loop over the work (persistent style)",
              _regex(_GRID_STRIDE)),
    Technique("read_only_cache", "read-only data path hints (__ldg, const __restrict__ pointers)", _regex(_READ_ONLY)),
    Technique("launch_bounds", "bounds threads per block / registers for the compiler (__launch_bounds__)", _regex(_LAUNCH_BOUNDS)),
    Technique("fast_math", "approximate math (--use_fast_math, __expf, __fdividef ...)", _regex(_FAST_MATH)),
    Technique("vendor_library", "calls cuBLAS/cuDNN (directly or through ATen's mm/conv from C++) or builds on CUTLASS/CuTe", _regex(_VENDOR)),
    Technique("torch_compile", "compiles PyTorch code with torch.compile (TorchDynamo/Inductor)", _regex(_TORCH_COMPILE)),
    Technique("side_streams", "creates or switches to extra CUDA streams (not allowed in honest timing)", _regex(_STREAMS)),
    Technique("fusion", "one custom kernel does what the reference does in several ops (heuristic: op counts)",
              _fusion, needs_reference=True),
    Technique("algebraic_simplification", "fewer ops than the reference and no compiled code: the math was rewritten (heuristic)",
              _algebraic, needs_reference=True),
)
TECHNIQUE_NAMES: tuple[str, ...] = tuple(t.name for t in TECHNIQUES)
DESCRIPTIONS: dict[str, str] = {t.name: t.description for t in TECHNIQUES}


def tag_source(source: str, reference_source: str | None = None) -> list[Tag]:
    """The techniques `source` uses, in catalogue order. Without `reference_source`, fusion and
    algebraic simplification (which compare against the reference's forward) are not tagged."""
    ctx = _Context(source_views(source), source_views(reference_source) if reference_source else None, {})
    for tech in TECHNIQUES:
        if tech.needs_reference and ctx.reference is None:
            continue
        evidence, count = tech.detect(ctx)
        if count:
            ctx.found[tech.name] = Tag(tech.name, tech.description, tuple(evidence), count)
    return list(ctx.found.values())


def tag_names(source: str, reference_source: str | None = None) -> set[str]:
    return {t.name for t in tag_source(source, reference_source)}
