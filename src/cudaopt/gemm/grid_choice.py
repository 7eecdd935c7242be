"""Table choices from whole-grid runs (session 38): ours or torch.matmul where every grid agrees.

The fallback passes (tune.py) decide ours against a fallback with a short two-candidate screen. Session 38 compared
those screens with two whole grids of the same table on two cards: per shape the screens' fallback / ours ratio
differed from a grid's by 4.2% (sd; the two grids from each other by 1.7%) and leaned 1.5% against ours, so the table
kept shapes on torch.matmul that ours won in both grids by 2-10%. A grid times every candidate of a shape in the same
graph replays (bench.py), which is also how the benchmark of record reads the dispatcher.

`rechoose` moves a shape only where every grid given agrees by a margin, and only between what the grids timed:
- a shape handed to torch.matmul or cuBLASLt goes to ours (the table's kernel of record, the one the grid timed as
  "ours") where in every grid dispatch / ours > margin and ours passed the grid's checks;
- a shape on ours goes to torch.matmul where in every grid dispatch / torch > margin;
- (session 40) any shape goes to cuBLASLt's autotuned NN algorithm (the dispatcher's "cublaslt" fallback) where in every
  grid dispatch / lt_auto_nn > margin and the grids that record the algorithm (`lt_auto_nn_algo`, bench-gemm from
  session 40 on) all name the same one; at least one must. Session 38's two grids had 15 shapes where cuBLASLt's best
  NN algorithm beat the dispatcher's choice (ours, torch.matmul or another cuBLASLt algorithm) by over 1% in both.
Where more than one move qualifies, the one whose smallest gain over the grids is largest is taken.
A grid whose dispatch label for a shape is not the table's choice (it ran another table) does not count for that
shape. Judge the new table on a fresh grid: the grids it was chosen from read it optimistically.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
from dataclasses import dataclass
from pathlib import Path

from cudaopt.gemm.configs import BT_TN_LABEL
from cudaopt.gemm.dispatch import Shape, entry_choice
from cudaopt.gemm.timing import L2_FLUSHED, PROTOCOL_LINE


@dataclass(frozen=True)
class Move:
    shape: Shape
    was: str  # the table's dispatch label before
    to: str  # "ours", "torch" or "cublaslt"
    ratios: tuple[float, ...]  # per grid, dispatch time over the new choice's
    algo: int = -1  # a move to "cublaslt": the algorithm's index (the table's lt_algo)


class GridError(ValueError):
    """A grid file that is not a bench-gemm shapes.csv."""


NEEDED = ("m", "n", "k", "ours_us", "torch_us", "dispatch_us", "dispatch", "choice", "correct")


def table_data(path: Path) -> dict:
    """A tuned table's JSON (.json or .json.gz); GridError where it is JSON but not a table (no entries list). Unreadable
    or non-JSON files raise as they are (OSError, ValueError), for the caller to word."""
    raw = Path(path).read_bytes()
    data = json.loads(gzip.decompress(raw) if str(path).endswith(".gz") else raw)
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        raise GridError(f"{path}: not a tuned table (no entries list)")
    return data


def load_grid(path: Path) -> dict[Shape, dict]:
    """A bench-gemm shapes.csv (offline, GPU timing, run with the dispatcher): shape -> its row."""
    path = Path(path)
    if not path.is_file():
        raise GridError(f"{path}: no such file (give bench-gemm's shapes.csv of a grid run)")
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in NEEDED if c not in (reader.fieldnames or [])]
        if missing:
            raise GridError(f"{path}: not a bench-gemm shapes.csv with the dispatcher timed (missing columns "
                            f"{', '.join(missing)})")
        return {(int(r["m"]), int(r["n"]), int(r["k"])): r for r in reader}


def grid_flush(path: Path) -> bool | None:
    """(session 53) Whether the grid beside this shapes.csv timed with the L2 flush: from its shapes.jsonl (each record
    carries the run's protocol; none before session 53 or with the flush off), else from its summary.md's "timing
    protocol" line (written since 56488c7); None where neither says (a summary of an older run, or no files beside)."""
    log = Path(path).with_name("shapes.jsonl")
    if log.is_file():
        with open(log, errors="replace") as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue
                return bool((rec.get("protocol") or {}).get("l2_flush"))
    summary = Path(path).with_name("summary.md")
    if summary.is_file():
        for line in summary.read_text(errors="replace").splitlines():
            if line.startswith(PROTOCOL_LINE):
                return L2_FLUSHED in line
    return None


def mixed_protocols(paths: list[Path]) -> str:
    """One warning line where the grids were timed with and without the L2 flush (their slot offsets differ: session
    52-53), else ""."""
    flushes = {str(p): grid_flush(p) for p in paths}
    known = {f for f in flushes.values() if f is not None}
    if len(known) < 2:
        return ""
    off = ", ".join(p for p, f in flushes.items() if f is False)  # (grids whose protocol is unknown are left out)
    return (f"warning: these grids mix timing protocols (without the L2 flush: {off}); read grids of one protocol "
            "together where you can (docs/gemm.md, session 53)")


def positive(row: dict, key: str) -> float:
    """A grid row's number under `key`, NaN where it is empty, not a number or not above 0."""
    try:
        v = float(row.get(key) or "nan")
    except ValueError:
        return math.nan
    return v if v > 0 else math.nan


def _us(row: dict, name: str) -> float:
    return positive(row, f"{name}_us")


def _entry(e: dict):
    """A table entry's shape and the dispatcher's own reading of it (entry_choice); GridError for a bad entry."""
    try:
        shape = (int(e["m"]), int(e["n"]), int(e["k"]))
    except (KeyError, TypeError, ValueError):
        raise GridError(f"table entry {str(e)[:80]}: needs integer m, n, k (is this a tuned table?)") from None
    try:
        return shape, entry_choice(e)
    except ValueError as err:
        raise GridError(str(err)) from None


def lt_algo(rows: list[dict]) -> int | None:
    """The cuBLASLt NN algorithm (index into the heuristic's list, as the table's lt_algo) that the grids' autotuning
    agreed on: the one every grid recording `lt_auto_nn_algo` names; None where none records it or two differ."""
    named = {str(r.get("lt_auto_nn_algo") or "").strip() for r in rows} - {""}
    if len(named) != 1:
        return None
    try:
        algo = int(named.pop())
    except ValueError:
        return None
    return algo if algo >= 0 else None


# (session 40) a move's ratio read within rounds: the shapes.csv column of bench-gemm's paired comparison, and whether
# it is dispatch / target (False) or target / dispatch (True, to be inverted)
PAIRED_MOVE = {"ours": ("paired_ours_vs_dispatch", False), "torch": ("paired_dispatch_vs_torch", True),
               "cublaslt": ("paired_lt_auto_nn_vs_dispatch", False)}


def move_ratio(row: dict, to: str, column: str, paired: bool = False) -> float:
    """dispatch time over the move's target's in one grid row: of the two medians, or with `paired` the median of the
    within-round ratios where the grid has them (grids from session 40 on), else the medians'."""
    if paired:
        name, invert = PAIRED_MOVE[to]
        v = positive(row, name)
        if v > 0:
            return 1.0 / v if invert else v
    return _us(row, "dispatch") / _us(row, column)


def rechoose(entries: list[dict], grids: list[dict[Shape, dict]], margin: float = 1.01,
             paired: bool = False) -> tuple[list[dict], list[Move]]:
    """The entries with the moves every grid agrees on (module docstring), each moved entry carrying a
    "grid_choice" record; and the moves. paired: read each grid's ratio within rounds where it has them (move_ratio);
    kept off by default until a grid shows the paired A/A tighter than the medians'."""
    if not grids:
        raise GridError("give at least one grid")
    if not margin >= 1.0:
        raise GridError(f"margin {margin}: give 1.0 or more (a move needs the new choice faster by that factor)")
    out, moves = [], []
    for e in entries:
        shape, choice = _entry(e)
        rows = [g.get(shape) for g in grids]
        # (every grid must have run this table's choice and its kernel of record for the shape)
        if any(r is None or r["dispatch"] != choice.label() or r["choice"] != choice.as_ours().label() for r in rows):
            out.append(e)
            continue
        options = {"ours": "ours"} if choice.backend != "ours" else {"torch": "torch"}  # move -> the grid's column
        algo = lt_algo(rows)
        if algo is not None and not (choice.backend == "cublaslt" and choice.algo == algo):
            options["cublaslt"] = "lt_auto_nn"
        agreed = {}
        for to, column in options.items():
            ratios = tuple(move_ratio(r, to, column, paired) for r in rows)
            if all(x > margin for x in ratios) and (to != "ours" or all(r["correct"] == "True" for r in rows)):
                agreed[to] = ratios  # (NaN never passes)
        if not agreed:
            out.append(e)
            continue
        to = max(agreed, key=lambda t: min(agreed[t]))
        ratios = agreed[to]
        rec = {"from": choice.label(), "to": to, "grids": len(rows), "ratios": [round(x, 4) for x in ratios],
               "margin": margin, **({"paired": True} if paired else {})}
        if to == "ours":  # the fallback's records go, as when the ours-back pass takes a shape back
            moved = {k: v for k, v in e.items() if k not in ("lt_algo", "lt_fallback")}
            moved["backend"] = "ours"
        elif to == "cublaslt":  # the kernel of record (config, splits) stays, as for a tuned fallback
            moved = {**e, "backend": "cublaslt", "lt_algo": algo}
            rec["lt_algo"] = algo
        else:
            moved = {**e, "backend": "torch"}
        out.append({**moved, "grid_choice": rec})
        moves.append(Move(shape, choice.label(), to, ratios, algo if to == "cublaslt" else -1))
    return out, moves


# --- a table read on grids of another table, and each grid left out (session 40) --------------------------------

@dataclass(frozen=True)
class TableReading:
    """A table's choices read on one grid (which may have run another table), against cuBLASLt autotuned max, beside
    what the grid's own dispatcher ran on the same shapes."""

    grid: int  # its index among the grids given
    shapes: int  # shapes read: the grid timed lt_auto_max and the table's choice
    same: int  # of those, the grid's dispatcher ran the table's choice itself
    columns: int  # read on another of the grid's candidates: ours (the same kernel), torch.matmul, or cuBLASLt's
    #               autotuned NN algorithm where the grid names that very algorithm
    approx: int  # a cuBLASLt algorithm the grid does not name (grids before session 40): read on its autotuned NN time,
    #              the fastest of its list, so optimistic
    unread: int  # choices the grid did not time (another kernel of ours, another named cuBLASLt algorithm): left out
    floor_grid: int  # shapes under the floor as the grid's dispatcher ran them
    floor_table: int  # and as the table would run them
    mean_grid: float  # mean of lt_auto_max / time - 1, the grid's dispatcher
    mean_table: float  # and the table's


def choice_time(choice, row: dict) -> tuple[float, str]:
    """What a grid row says `choice` takes (us), and how it was read: "same" (the grid's dispatcher ran it), "columns",
    "approx" or "unread" (NaN), as TableReading counts them."""
    if row["dispatch"] == choice.label():
        return _us(row, "dispatch"), "same"
    if choice.backend == "ours":
        return (_us(row, "ours"), "columns") if row["choice"] == choice.label() else (math.nan, "unread")
    if choice.backend == "torch":
        return _us(row, "torch"), "columns"
    named = lt_algo([row])
    if named is None:
        return _us(row, "lt_auto_nn"), "approx"
    return (_us(row, "lt_auto_nn"), "columns") if named == choice.algo else (math.nan, "unread")


def read_table(entries: list[dict], grid: dict[Shape, dict], index: int = 0, floor: float = 0.98) -> TableReading:
    """The table's choices read on the grid, shape by shape (choice_time), against the grid's dispatcher on the same
    shapes. A grid chosen from reads a table optimistically; read a candidate on grids it was not chosen from."""
    return _reading(entries, grid, index, floor, "lt_auto_max", "dispatch", choice_time)


def _reading(entries: list[dict], grid: dict[Shape, dict], index: int, floor: float, base_col: str, ran_col: str,
             time_of) -> TableReading:
    """read_table's count over the entries: base_col the baseline, ran_col what the grid's dispatcher ran, time_of(choice,
    row) the table's choice read on the row (its time and how it was read)."""
    counts = {"same": 0, "columns": 0, "approx": 0, "unread": 0}
    n = floor_grid = floor_table = 0
    sum_grid = sum_table = 0.0
    for e in entries:
        shape, choice = _entry(e)
        row = grid.get(shape)
        if row is None:
            continue
        base, t_grid = _us(row, base_col), _us(row, ran_col)
        if not (base > 0 and t_grid > 0):
            continue
        t, how = time_of(choice, row)
        if not t > 0:  # (unread, or a column the grid left empty)
            how = "unread"
        counts[how] += 1
        if how == "unread":
            continue
        n += 1
        floor_grid += base / t_grid < floor
        floor_table += base / t < floor
        sum_grid += base / t_grid - 1
        sum_table += base / t - 1
    return TableReading(index, n, counts["same"], counts["columns"], counts["approx"], counts["unread"], floor_grid,
                        floor_table, sum_grid / n if n else math.nan, sum_table / n if n else math.nan)


def held_out(entries: list[dict], grids: list[dict[Shape, dict]], margin: float = 1.01,
             floor: float = 0.98, paired: bool = False, bt: bool = False,
             both: bool = False) -> list[tuple[int, TableReading]]:
    """Leave one grid out: rechoose from the others, read the new table on the one left out (read_table; with bt the
    B^T route: rechoose_bt and read_table_bt, defined below; with both the layout a caller handing both reads:
    rechoose_both and read_table_both); per grid,
    (the moves the others chose, the reading). The grids a table was chosen from read it optimistically (the noise
    that passed the margin counts again); a grid left out does not, so this is what the candidate may show on a fresh
    grid, with no GPU time spent on one. Needs two or more grids; with two, each reading rests on a one-grid choice,
    noisier than the choice from both that the table gets."""
    if len(grids) < 2:
        raise GridError("leaving a grid out needs two or more grids")
    out = []
    for i, grid in enumerate(grids):
        choose, read = ((rechoose_both, read_table_both) if both else (rechoose_bt, read_table_bt) if bt
                        else (rechoose, read_table))
        new, moves = choose(entries, grids[:i] + grids[i + 1:], margin, paired)
        out.append((len(moves), read(new, grid, i, floor)))
    return out


# --- the route of a caller holding B transposed (session 42) -----------------------------------------------------
# hgemm on B^T (b = w.t(), nn.Linear's weight) runs the table's cuBLASLt TN algorithm where the entry names one
# (bt_lt_algo), else the NN choice's kernel through its B^T twin where it has one, else torch.matmul. Grids run with
# CUDAOPT_GEMM_BENCH_BT=1 time that route ("dispatch_bt", its label in the "dispatch_bt" column), the twin ("ours_bt",
# where the config has one), torch.matmul on the same B^T ("torch_bt") and cuBLASLt autotuned TN with its algorithm.

BT_NEEDED = ("dispatch_bt_us", "torch_bt_us", "lt_auto_tn_us", "lt_auto_tn_algo", "dispatch_bt")


def _tn_algo(rows: list[dict]) -> int | None:
    """The cuBLASLt TN algorithm every grid's autotuning named for the shape (as lt_algo does for NN)."""
    return lt_algo([{"lt_auto_nn_algo": r.get("lt_auto_tn_algo")} for r in rows])


def default_bt_time(row: dict, choice) -> float:
    """What the default B^T route takes in a grid row: the twin (ours_bt) where the NN choice is ours and the grid
    timed one, else torch.matmul on B^T (torch_bt): the route hgemm takes without a bt_lt_algo."""
    t = _us(row, "ours_bt") if choice.backend == "ours" else math.nan
    return t if t > 0 else _us(row, "torch_bt")


def _check_bt_grids(grids: list[dict[Shape, dict]], margin: float, flag: str) -> None:
    """GridError unless there are grids, the margin is at least 1 and the grids timed the B^T route."""
    if not grids:
        raise GridError("give at least one grid")
    if not margin >= 1.0:
        raise GridError(f"margin {margin}: give 1.0 or more (a move needs the new choice faster by that factor)")
    missing = [c for c in BT_NEEDED if c not in next(iter(grids[0].values()), {})]
    if missing:
        raise GridError(f"a grid lacks {', '.join(missing)}: {flag} needs grids run with CUDAOPT_GEMM_BENCH_BT=1 "
                        "(bench-gemm from session 42 on)")


def rechoose_bt(entries: list[dict], grids: list[dict[Shape, dict]], margin: float = 1.01,
                paired: bool = False) -> tuple[list[dict], list[Move]]:
    """The entries with the B^T-route moves every grid agrees on, and the moves ("cublaslt_tn" or "default"):
    - an entry without bt_lt_algo gets the cuBLASLt TN algorithm every grid's autotuning named where in every grid
      dispatch_bt / lt_auto_tn > margin (paired: within rounds, where the grid has the column);
    - an entry with one loses it where in every grid dispatch_bt / the default route (default_bt_time) > margin, or
      moves to the named algorithm where the grids agree on another one as above.
    A grid counts for a shape only where it ran the entry's B^T route: the TN algorithm it names (the same route
    whatever NN choice the grid ran: a candidate that also moved the shape's NN entry is still read), or, for an
    entry without one, the default route of the same NN choice (its labels). The default route of our kernel is its
    twin, read only from grids whose kernel of record for the shape is that kernel. The moved entry carries a
    "bt_grid_choice" record. Judge the table on a fresh B^T grid, as rechoose's."""
    _check_bt_grids(grids, margin, "--bt")
    out, moves = [], []
    for e in entries:
        shape, choice = _entry(e)
        rows = [g.get(shape) for g in grids]
        want = choice.bt_label()
        if any(r is None or not r.get("dispatch_bt")
               or (r["dispatch_bt"] != want if want
                   else r["dispatch"] != choice.label() or r["dispatch_bt"].startswith(BT_TN_LABEL))
               for r in rows):
            out.append(e)
            continue
        agreed = {}
        algo = _tn_algo(rows)
        if algo is not None and algo != choice.bt_algo:
            # (the paired column is lt_auto_tn / dispatch_bt within rounds, t_ref / t_ours: inverted here)
            ratios = tuple(positive(r, "paired_dispatch_bt_vs_lt_auto_tn") if paired else math.nan for r in rows)
            ratios = tuple(1.0 / p if p > 0 else _us(r, "dispatch_bt") / _us(r, "lt_auto_tn")
                           for p, r in zip(ratios, rows))
            if all(x > margin for x in ratios):
                agreed["cublaslt_tn"] = ratios
        if choice.bt_algo >= 0 and (choice.backend != "ours" or all(r.get("choice") == choice.label() for r in rows)):
            ratios = tuple(_us(r, "dispatch_bt") / default_bt_time(r, choice) for r in rows)
            if all(x > margin for x in ratios):
                agreed["default"] = ratios
        if not agreed:
            out.append(e)
            continue
        to = max(agreed, key=lambda t: min(agreed[t]))
        ratios = agreed[to]
        rec = {"from": want or "default", "to": to, "grids": len(rows), "ratios": [round(x, 4) for x in ratios],
               "margin": margin, **({"paired": True} if paired else {})}
        moved = {k: v for k, v in e.items() if k != "bt_lt_algo"}
        if to == "cublaslt_tn":
            moved["bt_lt_algo"] = rec["bt_lt_algo"] = algo
        out.append({**moved, "bt_grid_choice": rec})
        moves.append(Move(shape, want or "default", to, ratios, algo if to == "cublaslt_tn" else -1))
    return out, moves


def bt_choice_time(choice, row: dict) -> tuple[float, str]:
    """What a B^T grid row says the entry's B^T route takes (us), and how it was read (choice_time's counts): the grid
    ran that route ("same"); the TN algorithm the grid's autotuning named, or the default route's twin or torch.matmul
    on B^T ("columns"); a TN algorithm the grid did not time ("unread", NaN)."""
    want = choice.bt_label()
    ran = row.get("dispatch_bt") or ""
    if want is not None:  # (the label names the algorithm: the same route whatever the grid's NN choice)
        if ran == want:
            return _us(row, "dispatch_bt"), "same"
        return (_us(row, "lt_auto_tn"), "columns") if _tn_algo([row]) == choice.bt_algo else (math.nan, "unread")
    if ran and not ran.startswith(BT_TN_LABEL) and row.get("dispatch") == choice.label():
        return _us(row, "dispatch_bt"), "same"  # (the default route of the same NN choice)
    if choice.backend == "ours" and row.get("choice") != choice.label():
        return math.nan, "unread"  # (the grid's twin is another kernel)
    return default_bt_time(row, choice), "columns"


def read_table_bt(entries: list[dict], grid: dict[Shape, dict], index: int = 0, floor: float = 0.98) -> TableReading:
    """read_table for the B^T route: the table's routes read on a B^T grid against cuBLASLt autotuned TN, beside the
    route the grid ran (its dispatch_bt). Rows of another NN choice count too: the route reads its own columns."""
    return _reading(entries, grid, index, floor, "lt_auto_tn", "dispatch_bt", bt_choice_time)


# --- the layout hgemm reads when handed both (session 49) ------------------------------------------------------------
# The seed's harness hands every function B and its column-major copy (untimed); hgemm(a, b, b_col_major=...) reads
# the copy through its B^T route where the table's entry says "both_layouts": "bt". A B^T grid times both routes of
# the same entry ("dispatch" and "dispatch_bt"), so it can say which is faster per shape.


def both_ratio(choice, row: dict, paired: bool = False) -> float:
    """How much faster the entry's B^T route is than its NN choice in one grid row: t_nn / t_bt, each read as the
    table would run it (choice_time, bt_choice_time: the grid's own run of it, or the column of the same kernel or
    algorithm); within rounds where asked, the grid ran both itself and has the column (bench-gemm from session 49 on,
    or its log read again), else the medians'. NaN where the grid did not time one of them (or only approximately)."""
    t_nn, how_nn = choice_time(choice, row)
    t_bt, how_bt = bt_choice_time(choice, row)
    if not (t_nn > 0 and t_bt > 0) or "approx" in (how_nn, how_bt):
        return math.nan
    p = positive(row, "paired_dispatch_bt_vs_dispatch") if paired and how_nn == how_bt == "same" else math.nan
    return p if p > 0 else t_nn / t_bt


def rechoose_both(entries: list[dict], grids: list[dict[Shape, dict]], margin: float = 1.01,
                  paired: bool = False) -> tuple[list[dict], list[Move]]:
    """The entries with the layout a caller handing both should have read, where every grid agrees, and the moves:
    "both_layouts": "bt" where in every grid the entry's B^T route reads faster than its NN choice by the margin
    (both_ratio), back to "nn" (the key dropped) where an entry says "bt" and every grid reads the NN choice faster by
    it. A grid counts for a shape only where it timed both as the entry runs them (so `--bt` moves made from the same
    grids first are read too). The moved entry carries a "both_grid_choice" record. Judge the table on a fresh B^T grid
    (its "dispatch_both" column), as rechoose's."""
    _check_bt_grids(grids, margin, "--both")
    out, moves = [], []
    for e in entries:
        shape, choice = _entry(e)
        rows = [g.get(shape) for g in grids]
        ratios = tuple(both_ratio(choice, r, paired) if r is not None else math.nan for r in rows)
        was = "bt" if choice.both_bt else "nn"
        if was == "nn" and all(x > margin for x in ratios):
            to = "bt"
        elif was == "bt" and all(x * margin < 1.0 for x in ratios):
            to, ratios = "nn", tuple(1.0 / x for x in ratios)
        else:
            out.append(e)
            continue
        rec = {"from": was, "to": to, "grids": len(rows), "ratios": [round(x, 4) for x in ratios], "margin": margin,
               **({"paired": True} if paired else {})}
        moved = {k: v for k, v in e.items() if k != "both_layouts"}
        out.append({**moved, **({"both_layouts": "bt"} if to == "bt" else {}), "both_grid_choice": rec})
        moves.append(Move(shape, was, to, ratios))
    return out, moves


def both_choice_time(choice, row: dict) -> tuple[float, str]:
    """What a B^T grid row says the entry takes for a caller handing both layouts: its B^T route where it reads the
    copy (bt_choice_time), else its NN choice (choice_time)."""
    return bt_choice_time(choice, row) if choice.both_bt else choice_time(choice, row)


def read_table_both(entries: list[dict], grid: dict[Shape, dict], index: int = 0, floor: float = 0.98) -> TableReading:
    """read_table for a caller handing both layouts: the table's layouts read on a B^T grid against cuBLASLt autotuned
    max, beside the grid's dispatcher on B as given."""
    return _reading(entries, grid, index, floor, "lt_auto_max", "dispatch", both_choice_time)
