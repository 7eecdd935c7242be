"""Static SASS report of the wgmma kernels, read on the CPU machine (no GPU needed).

For each kernel it finds the loops that issue HGMMA (a backward branch whose body holds one) and counts
what the issuing warp executes per trip besides the HGMMAs, against the tensor-pipe cycles those HGMMAs
occupy (a 64 x N x 16 fp16 HGMMA keeps an SM's tensor cores busy about N / 2 cycles). Kernels whose
k-block spends many instructions per tensor cycle are the ones an instruction-level change can speed up
(session 34: the 64 x 64 ping-pong's 93 instructions a k-block, 60 after the uniform descriptors).

    python scripts/gemm_sass.py                       # the default build, one line a kernel
    python scripts/gemm_sass.py -D CUDAOPT_EXPERIMENT_RING_FIRST_WAIT --against-default
    python scripts/gemm_sass.py --against $CUDAOPT_CACHE/sass/hgemm_wgmma_<older>.cubin   # a refactor: same code?
    python scripts/gemm_sass.py --kernel 'hgemm_wgmma2_kernel<128, 192, 2, 4, 2, 1, false' --loop
    python scripts/gemm_sass.py --pdl -D CUDAOPT_EXPERIMENT_TOP_WAIT --against-default

--pdl (session 36) reports what a latency-bound call executes between its PDL wait (griddepcontrol.wait, SASS
ACQBULK) and its first TMA load: the shortest control-flow path, in instructions, and the long-latency ones on it
(integer division's I2F / MUFU / F2I, special-register and constant reads).

It compiles csrc/hgemm_wgmma.cu to a cubin with nvcc (about 40 s a build, cached under
$CUDAOPT_CACHE/sass by the defines and the source's hash) and disassembles it with cuobjdump, taken from
PATH or from the pip package nvidia-cuda-cuobjdump.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

CSRC = Path(__file__).resolve().parents[1] / "src" / "cudaopt" / "gemm" / "csrc"
try:  # the dev install; the script also runs from a bare checkout
    from cudaopt.gemm.build import BuildError, check_defines
except ImportError:
    check_defines = None
HGMMA_RE = re.compile(r"HGMMA\.64x(\d+)x16")
# A branch and its target (any form: BRA, BRA.U.ANY, predicated or not, uniform predicates too).
BRANCH_RE = re.compile(r"\bBRA(?:\.\S+)?\s+(?:!?U?P\d,\s*)?(0x[0-9a-f]+)")
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
    if check_defines is not None:  # (the package's own check: malformed or retired defines)
        try:
            check_defines(tuple(defines))
        except BuildError as e:
            sys.exit(f"gemm_sass: {e}")
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

    @property
    def family(self) -> str:
        """The opcode without its modifiers (HGMMA.64x64x16.F32 -> HGMMA)."""
        return self.op.split(".")[0]


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
        return sum(1 for i in self.body if i.family == op)


@dataclass
class Kernel:
    mangled: str
    name: str
    instrs: list[Instr]

    @functools.cached_property
    def index(self) -> dict[int, int]:
        """Address -> position in instrs (branch targets are addresses)."""
        return {ins.addr: k for k, ins in enumerate(self.instrs)}

    def loops(self) -> list[Loop]:
        """Backward branches whose body issues an HGMMA, innermost (shortest) first per branch."""
        index = self.index
        found = []
        for k, ins in enumerate(self.instrs):
            m = BRANCH_RE.search(ins.text)
            if not m:
                continue
            target = int(m.group(1), 16)
            if target > ins.addr or target not in index:
                continue
            loop = Loop(index[target], k, self.instrs[index[target] : k + 1])
            if loop.hgmma:
                found.append(loop)
        return found


def producer_loop(k: Kernel) -> list[Instr] | None:
    """The producer's k-block loop (session 38): the shortest backward-branch body that issues a TMA load and no
    HGMMA, leaving out the warp-uniform ELECT loops (BRA.U.ANY) around each load; None without one."""
    best = None
    for j, ins in enumerate(k.instrs):
        m = BRANCH_RE.search(ins.text)
        if not m or "U.ANY" in ins.text:
            continue
        target = int(m.group(1), 16)
        if target > ins.addr or target not in k.index:
            continue
        body = k.instrs[k.index[target] : j + 1]
        if any(i.family == "UTMALDG" for i in body) and not any(i.family == "HGMMA" for i in body):
            best = body if best is None or len(body) < len(best) else best
    return best


TMA_LOAD_OPS = ("UTMALDG", "UBLKCP", "LDGSTS")  # the first operand fetch: TMA tile, bulk copy, cp.async
SLOW_OPS = ("MUFU", "I2F", "F2I", "S2R", "S2UR", "LDC", "ULDC", "USETMAXREG", "UTMACCTL", "SYNCS")


# Instructions that touch global memory (or another grid's data through it): what a PDL wait must precede.
GLOBAL_OPS = ("LDG", "STG", "LD", "ST", "ATOM", "ATOMG", "RED", "REDG", "UTMALDG", "UTMASTG", "UTMAREDG", "UBLKCP",
              "UBLKRED", "LDGSTS", "UBLKPF", "UTMAPF")


def successors(k: Kernel, i: int) -> list[int]:
    """Control-flow successors of instruction i: a branch's target, and the next instruction unless i is an
    unpredicated branch or EXIT."""
    ins = k.instrs[i]
    succ = []
    m = BRANCH_RE.search(ins.text)
    if m and int(m.group(1), 16) in k.index:
        succ.append(k.index[int(m.group(1), 16)])
    if not ((m or ins.op == "EXIT") and not ins.text.startswith("@")) and i + 1 < len(k.instrs):
        succ.append(i + 1)
    return succ


def unguarded_global_ops(k: Kernel) -> list[Instr]:
    """Global-memory instructions reachable from the kernel's entry on a path that passes no PDL wait (ACQBULK):
    under programmatic launch such an access may race the previous kernel on the stream. Empty for a safe kernel."""
    seen, todo, found = {0}, [0], []
    while todo:
        i = todo.pop()
        ins = k.instrs[i]
        if ins.op == "ACQBULK":
            continue  # past the wait: guarded
        if ins.family in GLOBAL_OPS:
            found.append(ins)
        for j in successors(k, i):
            if j not in seen:
                seen.add(j)
                todo.append(j)
    return sorted(found, key=lambda x: x.addr)


def wait_to_load(k: Kernel) -> dict | None:
    """The shortest control-flow path (in instructions) from a PDL wait (ACQBULK) to a TMA load, with the
    long-latency instructions on it; None where the kernel has no such path. Edges: fall-through (not after an
    unpredicated BRA or EXIT) and branch targets, so spin loops and the consumers' code are not on the path."""
    import heapq

    starts = [i for i, ins in enumerate(k.instrs) if ins.op == "ACQBULK"]
    if not starts:
        return None
    dist = {i: 0 for i in starts}
    prev: dict[int, int] = {}
    heap = [(0, i) for i in starts]
    while heap:
        d, i = heapq.heappop(heap)
        if d > dist.get(i, 1 << 30):
            continue
        ins = k.instrs[i]
        if ins.family in TMA_LOAD_OPS and d > 0:
            path = [i]
            while path[-1] in prev:
                path.append(prev[path[-1]])
            path = path[::-1]
            body = [k.instrs[j] for j in path[1:-1]]
            slow = [j.family for j in body if j.family in SLOW_OPS]
            return {"wait": k.instrs[path[0]].addr, "load": ins.addr, "instrs": len(body), "slow": slow}
        for j in successors(k, i):
            if d + 1 < dist.get(j, 1 << 30):
                dist[j] = d + 1
                prev[j] = i
                heapq.heappush(heap, (d + 1, j))
    return None


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
    ap.add_argument(
        "--against", type=Path, metavar="CUBIN",
        help="compare with this cubin (say, an older commit's build from the cache) instead of the default build",
    )
    ap.add_argument("--kernel", help="only kernels whose demangled name contains this text")
    ap.add_argument("--loop", action="store_true", help="print the main HGMMA loop of each selected kernel")
    ap.add_argument("--pdl", action="store_true",
                    help="report each kernel's path from its PDL wait to its first TMA load instead of its main loop")
    args = ap.parse_args(argv)

    if args.against and not args.against.is_file():  # (before a 40 s build, not after it)
        print(f"gemm_sass: --against {args.against}: no such cubin; give a path that gemm_sass built", file=sys.stderr)
        return 2
    cache = Path(os.environ.get("CUDAOPT_CACHE", Path.home() / ".cache" / "cudaopt")) / "sass"
    cubin = args.cubin or build_cubin(args.defines, cache)
    kernels = disassemble(cubin)
    base_cubin = args.against or (build_cubin([], cache) if args.against_default else None)
    base_kernels = disassemble(base_cubin) if base_cubin else []
    base = {k.name: summary(k) for k in base_kernels}
    base_text = {k.name: [i.text for i in k.instrs] for k in base_kernels}
    if args.kernel:
        kernels = [k for k in kernels if args.kernel in k.name]
        if not kernels:
            print(f"gemm_sass: no kernel's name contains {args.kernel!r}", file=sys.stderr)
            return 2

    if args.pdl:
        return pdl_report(kernels, {k.name: k for k in base_kernels})

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
        what = str(args.against) if args.against else "the default build"
        print(f"{same} of {len(kernels)} kernels identical to {what}'s (instruction for instruction)")
        missing = sorted(set(base_text) - {k.name for k in kernels})
        if missing and not args.kernel:
            print(f"{len(missing)} kernels of the base are not in this build: {', '.join(missing[:5])}")
    return 0


def pdl_report(kernels: list[Kernel], base: dict[str, Kernel]) -> int:
    """One line a kernel: instructions and long-latency ones from the PDL wait to the first TMA load (and the
    base build's, with --against-default or --against), most first."""
    rows = []
    for k in kernels:
        r = wait_to_load(k)
        if r is None:
            continue
        b = wait_to_load(base[k.name]) if k.name in base else None
        line = f"{r['instrs']:5d} {len(r['slow']):4d}"
        if base:
            line += f"  {b['instrs'] if b else '-':>5} {len(b['slow']) if b else '-':>4}"
        rows.append((r["instrs"], f"{line}  {k.name}  [{' '.join(r['slow'])}]"))
    head = "instr slow" + ("  base  slow" if base else "")
    print(head + "  kernel  [long-latency instructions between the PDL wait and the first TMA load]")
    for _, line in sorted(rows, reverse=True):
        print(line)
    if rows:
        counts = sorted(n for n, _ in rows)
        print(f"{len(rows)} kernels with a TMA load after a PDL wait; median {counts[len(counts) // 2]} instructions "
              "on the way")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
