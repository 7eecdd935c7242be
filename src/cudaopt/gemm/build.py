"""Build the HGEMM kernel family and the cuBLAS baselines into two shared libraries with nvcc.

One nvcc call per library (the kernel library is two translation units, the mma.sync family and the
Hopper wgmma family, about 10 s together), into
`src/cudaopt/gemm/_build/` (gitignored). The kernel library needs only the CUDA runtime; the
baseline library also needs cuBLAS headers and libraries, looked up in the CUDA toolkit and in the
`nvidia-cublas` wheel that PyTorch installs. `python -m cudaopt.gemm.build` builds both.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
CSRC = HERE / "csrc"
BUILD_DIR = HERE / "_build"
KERNEL_LIB = "libcudaopt_hgemm.so"
BLAS_LIB = "libcudaopt_blas.so"
KERNEL_SOURCES = ("hgemm_mma.cu", "hgemm_wgmma.cu")
ARCH_FLAGS = ["-gencode=arch=compute_90a,code=sm_90a"]
COMMON_FLAGS = ["-O3", "-std=c++17", "-Xcompiler", "-fPIC", "-shared", "-cudart", "shared"]


class BuildError(RuntimeError):
    """nvcc is missing or failed; the message carries the compiler's last lines."""


# Defines the kernels once read and no longer do (the measured forms are the only form, or the default): name ->
# (why, a commit that still builds the define's own form). nvcc ignores an unknown define, so an A/B run naming one
# would time the shipped build against itself: refuse it instead.
_S37 = "db3d011"  # session 37 retired these; db3d011 still builds them
_S38 = "e02d1c6"  # session 38 made these the default; e02d1c6 still needs them named
_S43 = "69b7b1b"  # session 43 made the producer ring the default; 69b7b1b still needs it named
RETIRED_DEFINES = {
    "CUDAOPT_EXPERIMENT_PER_THREAD_DESC": ("session 37: adopted the uniform descriptors (session 34)", _S37),
    "CUDAOPT_SESSION34_RING": ("session 37: adopted session 35's four ring cuts", _S37),
    "CUDAOPT_EXPERIMENT_U32_SLOTS": ("session 37: the default since session 35", _S37),
    "CUDAOPT_EXPERIMENT_SK_UNIFORM": ("session 37: the default since session 35", _S37),
    "CUDAOPT_EXPERIMENT_SLOT_DESC": ("session 37: the default since session 35", _S37),
    "CUDAOPT_EXPERIMENT_DESC_HI": ("session 37: the default since session 35", _S37),
    "CUDAOPT_EXPERIMENT_WAIT_FIRST_GEMM": (
        "session 37: the release-first order of the plain GEMMs (session 31) is the only one", _S37),
    "CUDAOPT_EXPERIMENT_RELEASE_FIRST": ("session 37: refuted in session 31 (split-K and reduce wait first)", _S37),
    "CUDAOPT_EXPERIMENT_RELEASE_FIRST_SPLITK": (
        "session 37: refuted in session 31 (split-K and reduce wait first)", _S37),
    "CUDAOPT_EXPERIMENT_RELEASE_FIRST_REDUCE": (
        "session 37: refuted in session 31 (split-K and reduce wait first)", _S37),
    "CUDAOPT_EXPERIMENT_LATE_WAIT": (
        "session 38: the default; CUDAOPT_EXPERIMENT_TOP_WAIT builds the old order", _S38),
    "CUDAOPT_EXPERIMENT_FRESH_RING": (
        "session 38: the default; CUDAOPT_EXPERIMENT_RING_FIRST_WAIT builds the old ring", _S38),
    "CUDAOPT_EXPERIMENT_PRODUCER_RING": (
        "session 43: the default; CUDAOPT_EXPERIMENT_POINTER_PRODUCER builds the old producer", _S43),
}


@dataclass(frozen=True)
class BuildResult:
    kernel_lib: Path
    blas_lib: Path | None  # None when cuBLAS headers or libraries were not found
    blas_error: str | None


def find_nvcc() -> str:
    for cand in (shutil.which("nvcc"), os.environ.get("CUDA_HOME", "") + "/bin/nvcc",
                 "/usr/local/cuda/bin/nvcc"):
        if cand and Path(cand).is_file():
            return cand
    raise BuildError("nvcc not found: install the CUDA toolkit or set CUDA_HOME")


def _cuda_roots(nvcc: str) -> list[Path]:
    roots = [Path(nvcc).resolve().parent.parent, Path("/usr/local/cuda")]
    if os.environ.get("CUDA_HOME"):
        roots.insert(0, Path(os.environ["CUDA_HOME"]))
    roots += [Path(p) for p in sorted(glob.glob("/usr/local/cuda-*"))]
    # pip's nvidia-* wheels (as installed with PyTorch) carry cuBLAS headers and libraries too.
    for site in sys.path:
        roots += [Path(p) for p in sorted(glob.glob(os.path.join(site, "nvidia", "*")))]
    return roots


def find_cublas(nvcc: str) -> tuple[Path, Path, str, str] | None:
    """(include dir, lib dir, libcublas file name, libcublasLt file name), or None."""
    include = lib_dir = None
    for root in _cuda_roots(nvcc):
        for inc in (root / "include", root / "targets/x86_64-linux/include"):
            if include is None and (inc / "cublasLt.h").is_file():
                include = inc
        for lib in (root / "lib64", root / "lib", root / "targets/x86_64-linux/lib"):
            if lib_dir is None and glob.glob(str(lib / "libcublasLt.so*")):
                lib_dir = lib
    if include is None or lib_dir is None:
        return None

    def pick(prefix: str) -> str:
        names = sorted(Path(p).name for p in glob.glob(str(lib_dir / f"{prefix}.so*")))
        return names[0]  # "libcublas.so" sorts before "libcublas.so.13"

    return include, lib_dir, pick("libcublas"), pick("libcublasLt")


def _nvcc(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
        raise BuildError(f"nvcc failed ({' '.join(cmd[:3])} ...):\n{tail}")


def defines_stamp(kernel_lib: Path) -> Path:
    """The file beside a kernel library that names the defines it was built with (one a line; empty: the default)."""
    return kernel_lib.with_name(kernel_lib.name + ".defines")


def built_defines(kernel_lib: Path) -> tuple[str, ...]:
    """The defines a kernel library was built with, from its stamp (a library older than the stamps: none)."""
    stamp = defines_stamp(Path(kernel_lib))
    return tuple(stamp.read_text().split()) if stamp.exists() else ()


def env_defines() -> tuple[str, ...]:
    """CUDAOPT_GEMM_DEFINES (names or NAME=VALUE, separated by spaces or commas): a diagnostic build of the package's
    own library, for a whole benchmark run of a variant (bench-gemm's summary names them), sorted and each once, as
    the library's stamp holds them. Unset: the shipped build."""
    return tuple(sorted(set(os.environ.get("CUDAOPT_GEMM_DEFINES", "").replace(",", " ").split())))


def check_defines(defines: tuple[str, ...]) -> None:
    """BuildError with one line for a define that is not NAME or NAME=VALUE, or that was retired."""
    bad = [d for d in defines if not d.replace("=", "").replace("_", "").isalnum() or d[0].isdigit()]
    if bad:
        raise BuildError(f"defines {bad}: give NAME or NAME=VALUE (letters, digits, underscores)")
    retired = [d for d in defines if d.split("=", 1)[0] in RETIRED_DEFINES]
    if retired:
        name = retired[0].split("=", 1)[0]
        why, commit = RETIRED_DEFINES[name]
        raise BuildError(f"define {name} was retired in {why}; the kernels ignore it. "
                         f"To build with it, check out {commit}")


def build(out_dir: Path | None = None, with_blas: bool = True, force: bool = False,
          defines: tuple[str, ...] | None = None) -> BuildResult:
    """Build what is missing (everything with force=True) and return the library paths. defines: extra
    preprocessor definitions ("NAME" or "NAME=VALUE") for the kernel library, for a diagnostic or A/B build in its
    own out_dir. A library is rebuilt when a source is newer or when it was built with other defines than these (its
    stamp, defines_stamp): a diagnostic build left in the package's folder is never taken for the shipped one.
    defines=None: those of CUDAOPT_GEMM_DEFINES (env_defines), none when it is unset."""
    defines = env_defines() if defines is None else tuple(defines)
    check_defines(defines)
    out = Path(out_dir) if out_dir else BUILD_DIR
    out.mkdir(parents=True, exist_ok=True)
    nvcc = find_nvcc()
    kernel_lib = out / KERNEL_LIB
    srcs = [CSRC / name for name in KERNEL_SOURCES]
    newest = max(s.stat().st_mtime for s in [*srcs, *CSRC.glob("*.cuh")])  # the headers they include too
    # (-D flags a caller appended to COMMON_FLAGS count as defines too)
    wanted = tuple(sorted({*defines, *(f[2:] for f in COMMON_FLAGS if f.startswith("-D"))}))
    stale = not kernel_lib.exists() or kernel_lib.stat().st_mtime < newest or built_defines(kernel_lib) != wanted
    if force or stale:
        defines_stamp(kernel_lib).unlink(missing_ok=True)
        try:
            _nvcc([nvcc, *ARCH_FLAGS, *COMMON_FLAGS, *(f"-D{d}" for d in defines), *map(str, srcs), "-o",
                   str(kernel_lib)])
        except BuildError:
            kernel_lib.unlink(missing_ok=True)  # (an older library without its stamp would pass for the default)
            raise
        defines_stamp(kernel_lib).write_text("".join(f"{d}\n" for d in wanted))
    if not with_blas:
        return BuildResult(kernel_lib, None, "not requested")
    blas_lib = out / BLAS_LIB
    blas_src = CSRC / "cublas_baselines.cu"
    if not force and blas_lib.exists() and blas_lib.stat().st_mtime >= blas_src.stat().st_mtime:
        return BuildResult(kernel_lib, blas_lib, None)
    found = find_cublas(nvcc)
    if found is None:
        return BuildResult(kernel_lib, None, "cuBLAS headers/libraries not found")
    include, lib_dir, cublas, cublaslt = found
    try:
        _nvcc([nvcc, *ARCH_FLAGS, *COMMON_FLAGS, f"-I{include}", str(blas_src), "-o", str(blas_lib),
               f"-L{lib_dir}", f"-l:{cublas}", f"-l:{cublaslt}", f"-Xlinker=-rpath={lib_dir}"])
    except BuildError as err:
        return BuildResult(kernel_lib, None, str(err))
    return BuildResult(kernel_lib, blas_lib, None)


if __name__ == "__main__":
    try:
        result = build(force="--force" in sys.argv)
    except BuildError as err:
        sys.exit(f"build: {err}")
    built = built_defines(result.kernel_lib)
    print(f"kernels: {result.kernel_lib}" + (f" (defines: {' '.join(built)})" if built else ""))
    print(f"blas:    {result.blas_lib or 'not built: ' + str(result.blas_error)}")
