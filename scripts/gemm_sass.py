"""Static SASS report of the wgmma kernels, read on the CPU machine (no GPU needed).

For each kernel it finds the loops that issue HGMMA (a backward branch whose body holds one) and counts
what the issuing warp executes per trip besides the HGMMAs, against the tensor-pipe cycles those HGMMAs
occupy (a 64 x N x 16 fp16 HGMMA keeps an SM's tensor cores busy about N / 2 cycles). Kernels whose
k-block spends many instructions per tensor cycle are the ones an instruction-level change can speed up
(session 34: the 64 x 64 ping-pong's 93 instructions a k-block, 60 after the uniform descriptors).

    python scripts/gemm_sass.py                       # the default build, one line a kernel
    python scripts/gemm_sass.py -D CUDAOPT_EXPERIMENT_U32_SLOTS --against-default
    python scripts/gemm_sass.py --kernel 'hgemm_wgmma2_kernel<128, 192, 2, 4, 2, 1, false' --loop

It compiles csrc/hgemm_wgmma.cu to a cubin with nvcc (about 40 s a build, cached under
$CUDAOPT_CACHE/sass by the defines and the source's hash) and disassembles it with cuobjdump, taken from
PATH or from the pip package nvidia-cuda-cuobjdump.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

CSRC = Path(__file__).resolve().parents[1] / "src" / "cudaopt" / "gemm" / "csrc"
HGMMA_RE = re.compile(r"HGMMA\.64x(\d+)x16")
INSTR_RE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")


def find_tool(name: str) -> str:
    """cuobjdump from PATH, else from the pip CUDA package (site-packages/nvidia/cu13/bin)."""
    path = shutil.which(name)
    if path:
        return path
    try:
        import nvidia  # the namespace package the pip CUDA tools install into
    except ImportError:
        nvidia = None
    for root in getattr(nvidia, "__path__", []) if nvidia else []:
        for cand in Path(root).glob(f"cu*/bin/{name}"):
            return str(cand)
    sys.exit(f"gemm_sass: {name} not found; pip install nvidia-cuda-cuobjdump or put the CUDA toolkit on PATH")


def build_cubin(defines: list[str], cache: Path) -> Path:
    """Compile hgemm_wgmma.cu for sm_90a from csrc/ (the anonymous namespace's name depends on the path)."""
    src = (CSRC / "hgemm_wgmma.cu").read_bytes() + (CSRC / "wgmma_asm.cuh").read_bytes()
    src += (CSRC / "splitk_reduce.cuh").read_bytes()
    key = hashlib.sha256(src + "\0".join(sorted(defines)).encode()).hexdigest()[:16]
    out = cache / f"hgemm_wgmma_{key}.cubin"
    if out.exists():
        return out
    cache.mkdir(parents=True, exist_ok=True)
    cmd = ["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-O3", "-std=c++17", "-cubin", "-w"]
    cmd += [f"-D{d}" for d in defines] + ["hgemm_wgmma.cu", "-o", str(out) + ".tmp"]
    print(f"gemm_sass: compiling ({' '.join(defines) or 'default'}), about 40 s", file=sys.stderr)
    res = subprocess.run(cmd, cwd=CSRC, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"gemm_sass: nvcc failed:\n{res.stderr[-2000:]}")
    os.replace(str(out) + ".tmp", out)
    return out


@dataclass
class Instr:
    addr: int
    text: str

    @property
    def op(self) -> str:
        body = self.text.split(None, 1)[0] if not self.text.startswith("@") else self.text.split(None, 2)[1]
        return body


@dataclass
class Loop:
    start: int  # index into the kernel's instruction list
    end: int  # the backward branch's index
    body: list[Instr] = field(default_factory=list)

    @property
    def hgmma(self) -> list[int]:
        return [int(m.group(1)) for i in self.body if (m := HGMMA_RE.search(i.text))]

    @property
    def tensor_cycles(self) -> float:
        return sum(n / 2 for n in self.hgmma)

    @property
    def other(self) -> int:
        return sum(1 for i in self.body if not HGMMA_RE.search(i.text) and i.op != "NOP")

    def count(self, op: str) -> int:
        return sum(1 for i in self.body if i.op.split(".")[0] == op)


@dataclass
class Kernel:
    mangled: str
    name: str
    instrs: list[Instr]

    def loops(self) -> list[Loop]:
        """Backward branches whose body issues an HGMMA, innermost (shortest) first per branch."""
        index = {ins.addr: k for k, ins in enumerate(self.instrs)}
        found = []
        for k, ins in enumerate(self.instrs):
            m = re.search(r"\bBRA\s+(?:!?U?P\d,\s*)?(0x[0-9a-f]+)", ins.text)
            if not m:
                continue
            target = int(m.group(1), 16)
            if target > ins.addr or target not in index:
                continue
            loop = Loop(index[target], k, self.instrs[index[target] : k + 1])
            if loop.hgmma:
                found.append(loop)
        return found


def parse(sass: str) -> list[Kernel]:
    kernels = []
    for block in re.split(r"\n\s*Function : ", sass)[1:]:
        mangled, rest = block.split("\n", 1)
        instrs = [Instr(int(m.group(1), 16), m.group(2).strip()) for m in INSTR_RE.finditer(rest)]
        kernels.append(Kernel(mangled.strip(), "", instrs))
    if kernels:  # one c++filt call for all names
        names = subprocess.run(
            ["c++filt"], input="\n".join(k.mangled for k in kernels), capture_output=True, text=True
        ).stdout.splitlines()
        for k, n in zip(kernels, names):
            k.name = n.replace("(anonymous namespace)::", "").split("(", 1)[0] if n else k.mangled
    return kernels


def disassemble(cubin: Path) -> list[Kernel]:
    res = subprocess.run([find_tool("cuobjdump"), "-sass", str(cubin)], capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"gemm_sass: cuobjdump failed on {cubin}: {res.stderr.strip()[:300]}")
    return parse(res.stdout)


def summary(k: Kernel) -> dict:
    """The kernel's main HGMMA loop: the one with the most tensor cycles (ties: the shorter body)."""
    loops = k.loops()
    if not loops:
        return {"instrs": len(k.instrs), "loop": None}
    main = max(loops, key=lambda lp: (lp.tensor_cycles, -len(lp.body)))
    return {
        "instrs": len(k.instrs),
        "loop": main,
        "hgmma": len(main.hgmma),
        "tensor": main.tensor_cycles,
        "other": main.other,
        "per100": 100.0 * main.other / main.tensor_cycles,
        "s2ur": main.count("S2UR"),
        "r2ur": main.count("R2UR"),
        "syncs": main.count("SYNCS"),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-D", dest="defines", action="append", default=[], help="a define for the build (repeatable)")
    ap.add_argument("--cubin", type=Path, help="read this cubin instead of building one")
    ap.add_argument(
        "--against-default", action="store_true",
        help="compare with the build without -D defines; kernels whose code is unchanged are counted, not listed",
    )
    ap.add_argument("--kernel", help="only kernels whose demangled name contains this text")
    ap.add_argument("--loop", action="store_true", help="print the main HGMMA loop of each selected kernel")
    args = ap.parse_args(argv)

    cache = Path(os.environ.get("CUDAOPT_CACHE", Path.home() / ".cache" / "cudaopt")) / "sass"
    cubin = args.cubin or build_cubin(args.defines, cache)
    kernels = disassemble(cubin)
    base_kernels = disassemble(build_cubin([], cache)) if args.against_default else []
    base = {k.name: summary(k) for k in base_kernels}
    base_text = {k.name: [i.text for i in k.instrs] for k in base_kernels}
    if args.kernel:
        kernels = [k for k in kernels if args.kernel in k.name]
        if not kernels:
            print(f"gemm_sass: no kernel's name contains {args.kernel!r}", file=sys.stderr)
            return 2

    rows, same = [], 0
    for k in kernels:
        s = summary(k)
        if base and [i.text for i in k.instrs] == base_text.get(k.name):
            same += 1
            continue  # byte-for-byte the default build's code: not listed
        if s["loop"] is None:
            continue
        line = (
            f"{s['other']:4d} {s['hgmma']:3d} {s['tensor']:6.0f} {s['per100']:6.1f} "
            f"{s['s2ur']:3d} {s['r2ur']:3d} {s['instrs']:6d}"
        )
        if base:
            b = base.get(k.name)
            line += f"  {b['other'] if b and b['loop'] else '-':>5} {s['instrs'] - b['instrs'] if b else 0:+6d}"
        rows.append((s["per100"], line + "  " + k.name))
        if args.loop:
            print(f"== {k.name}: loop of {len(s['loop'].body)} instructions")
            for ins in s["loop"].body:
                print(f"  {ins.addr:6x}  {ins.text}")
    head = " ins hgm tensor /100cy s2u r2u  total"
    head += "  base  dtotal" if base else ""
    print(head + "  kernel (main HGMMA loop: non-HGMMA instructions a trip, tensor cycles a trip)")
    for _, line in sorted(rows, reverse=True):
        print(line)
    if base:
        print(f"{same} of {len(kernels)} kernels identical to the default build's (instruction for instruction)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
