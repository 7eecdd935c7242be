"""Load KernelBench-format reference files and candidate files.

A reference file defines `class Model(nn.Module)`, `get_inputs()` and `get_init_inputs()`. A candidate
defines `class ModelNew` taking the same constructor arguments. Each file is imported in a module
namespace of its own, so two files never see each other's globals.

Optional module constants that cudaopt reads from a reference (KernelBench files have none of them):
  SMALL = {"batch_size": 4, ...}   module globals overridden for the small (CPU test) size
  TOLERANCE = {"atol": 1e-4, "rtol": 1e-4}   looser or tighter tolerances for this task
  INPUT_DOMAIN = {0: "fixed"}      per-input: "any" (default: inferred), "positive", "fixed"
  LEVEL = 1                         when the folder does not say
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path

SUITE_DIR = Path(__file__).parent / "suite"
CORPUS_DIR = Path(__file__).parent / "corpus"


class TaskError(Exception):
    """A reference or candidate that cannot be used; the message is one line saying what to do."""


@dataclass(frozen=True)
class Task:
    name: str
    level: int
    source: str
    path: Path | None = None

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    def to_dict(self) -> dict:
        return {"name": self.name, "level": self.level, "path": str(self.path) if self.path else None}


def read_source(path_or_source: str | Path) -> tuple[str, Path | None]:
    """Accept a path or the source text itself (anything with a newline is taken as source)."""
    if isinstance(path_or_source, Path) or "\n" not in str(path_or_source):
        p = Path(path_or_source)
        if not p.exists():
            raise TaskError(f"{p}: no such file; give the path of a Python file")
        if p.is_dir():
            raise TaskError(f"{p}: is a folder; give one Python file here (folders are for `tasks list`)")
        try:
            return p.read_text(), p
        except UnicodeDecodeError:
            raise TaskError(f"{p}: not a UTF-8 text file; give a Python source file") from None
    return str(path_or_source), None


def _level_of(path: Path | None, source: str) -> int:
    if path is not None:
        for part in reversed(path.parts):
            m = re.fullmatch(r"level_?(\d+)", part)
            if m:
                return int(m.group(1))
    m = re.search(r"^LEVEL\s*=\s*(\d+)", source, re.M)
    return int(m.group(1)) if m else 0


def load_task(path_or_source: str | Path, name: str | None = None) -> Task:
    source, path = read_source(path_or_source)
    if name is None:
        name = path.stem if path else "task_" + hashlib.sha256(source.encode()).hexdigest()[:8]
    return Task(name=name, level=_level_of(path, source), source=source, path=path)


def discover_tasks(root: str | Path) -> list[Task]:
    """A single file, a folder of task files, or a KernelBench checkout (its level1/..level3/ folders)."""
    root = Path(root)
    if not root.exists():
        raise TaskError(f"{root}: no such file or folder; give a task file, a folder or a KernelBench checkout")
    if root.is_file():
        return [load_task(root)]
    # A KernelBench checkout keeps its tasks under KernelBench/level1 ... level4.
    for sub in (root / "KernelBench", root):
        levels = sorted(p for p in sub.glob("level*") if p.is_dir())
        if levels:
            return [load_task(f) for lv in levels for f in sorted(lv.glob("*.py")) if not f.name.startswith("_")]
    files = sorted(f for f in root.rglob("*.py") if not f.name.startswith("_"))
    if not files:
        raise TaskError(f"{root}: no task files (*.py) found")
    return [load_task(f) for f in files]


def builtin_tasks() -> list[Task]:
    return discover_tasks(SUITE_DIR)


def find_builtin(name: str) -> Task:
    for t in builtin_tasks():
        if t.name == name:
            return t
    raise TaskError(f"no built-in task named {name!r}; `cudaopt tasks list` shows them")


def resolve_task(spec: str | Path) -> Task:
    """A path, source text, or the name of a built-in task."""
    if isinstance(spec, str) and "\n" not in spec and not Path(spec).exists() and re.fullmatch(r"[\w.-]+", spec):
        try:
            return find_builtin(spec.removesuffix(".py"))
        except TaskError:
            if spec.endswith(".py"):  # meant as a file: say so, not only that no built-in task has its name
                raise TaskError(f"{spec}: no such file, nor a built-in task of that name; give a KernelBench-format "
                                "task file or a name from `cudaopt tasks list`") from None
            raise
    return load_task(spec)


# ----------------------------------------------------------------------------------------------------------
# Importing (inside worker processes only: importing runs the file's top-level code)


def import_source(source: str, module_name: str, filename: str = "<source>") -> types.ModuleType:
    """Import source text as a fresh module of its own name; errors become one TaskError line."""
    spec = importlib.util.spec_from_loader(module_name, loader=None, origin=filename)
    module = importlib.util.module_from_spec(spec)
    module.__file__ = filename
    sys.modules[module_name] = module  # dataclasses, pickling and inspect look modules up here
    try:
        code = compile(source, filename, "exec")
        exec(code, module.__dict__)
    except SyntaxError as e:
        raise TaskError(f"{filename}:{e.lineno}: syntax error: {e.msg}") from None
    except Exception as e:  # noqa: BLE001 - any import-time failure of user code is a result
        raise TaskError(f"{filename}: failed to import: {type(e).__name__}: {e}") from e
    return module


def check_reference(module: types.ModuleType, filename: str) -> None:
    for attr in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, attr):
            raise TaskError(f"{filename}: reference lacks `{attr}`; a KernelBench task defines Model, get_inputs, get_init_inputs")
    if not inspect.isclass(module.Model):
        raise TaskError(f"{filename}: `Model` is not a class")


def check_candidate(module: types.ModuleType, reference: types.ModuleType, filename: str) -> None:
    if not hasattr(module, "ModelNew"):
        raise TaskError(f"{filename}: candidate lacks `class ModelNew`; define it with the reference Model's constructor arguments")
    if not inspect.isclass(module.ModelNew):
        raise TaskError(f"{filename}: `ModelNew` is not a class")
    ref_params = _init_params(reference.Model)
    cand_params = _init_params(module.ModelNew)
    if ref_params is not None and cand_params is not None and ref_params != cand_params:
        raise TaskError(
            f"{filename}: ModelNew.__init__({', '.join(cand_params)}) does not match Model.__init__({', '.join(ref_params)}); "
            "use the reference's constructor arguments"
        )


def _init_params(cls) -> list[str] | None:
    try:
        sig = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        return None
    params = list(sig.parameters.values())[1:]
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return None  # *args/**kwargs accept anything; the constructor call itself will tell
    return [p.name for p in params]


def apply_size(module: types.ModuleType, size: str) -> None:
    """Switch a reference module to its small sizes by overriding the globals get_inputs() reads."""
    if size == "small":
        small = getattr(module, "SMALL", None)
        if not isinstance(small, dict):
            raise TaskError(f"{module.__file__}: task has no SMALL sizes; run it at size 'full' or add SMALL = {{...}}")
        for k, v in small.items():
            if not hasattr(module, k):
                raise TaskError(f"{module.__file__}: SMALL names {k!r}, which the task does not define")
            setattr(module, k, v)


def identity_candidate(task: Task) -> str:
    """The reference's Model as a candidate (class renamed to ModelNew): the A/A check's candidate.

    The input functions and cudaopt's task constants are left out: the harness takes those from the
    reference, and a candidate has no business defining them.
    """
    import ast

    tree = ast.parse(task.source)
    drop = {"get_inputs", "get_init_inputs", "SMALL", "TOLERANCE", "INPUT_DOMAIN", "LEVEL"}
    lines = task.source.splitlines()
    for node in reversed(tree.body):
        names = {node.name} if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else {
            t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)}
        if names & drop:
            del lines[node.lineno - 1: node.end_lineno]
    src = re.sub(r"\bModel\b", "ModelNew", "\n".join(lines) + "\n")
    return f"# A/A candidate: the reference of {task.name}, unchanged but for the class name\n{src}"
