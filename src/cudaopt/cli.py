"""The `cudaopt` command line. Exit codes: 0 success, 1 the candidate failed a stage, 2 usage error."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Write, verify and time CUDA kernels for PyTorch modules.")
tasks_app = typer.Typer(no_args_is_help=True, help="The task suite: list tasks, check them for degenerate tolerances.")
app.add_typer(tasks_app, name="tasks")
train_app = typer.Typer(no_args_is_help=True, help="CUDA-L1's training stages: sft, self (self-supervised), grpo; and export.")
app.add_typer(train_app, name="train")
knowledge_app = typer.Typer(no_args_is_help=True, help="A local knowledge store (documents and code you may use) for prompt context.")
app.add_typer(knowledge_app, name="knowledge")
console = Console()
err = Console(stderr=True, soft_wrap=True)  # an error is one line, however long its path


def _usage_error(message: str) -> None:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False)  # escaped: '[#MODEL]' is text, not markup
    raise typer.Exit(2)


def _task_and_candidate(reference: str, candidate: Path):
    """The reference task, read once, and a check that the candidate file exists: a wrong path is reported the same
    on every machine, so callers do this before they look at the device."""
    from cudaopt.tasks.loader import TaskError, resolve_task

    try:
        task = resolve_task(reference)
    except TaskError as e:
        _usage_error(str(e))
    if not candidate.exists():
        _usage_error(f"{candidate}: no such file; give the path of a candidate file defining ModelNew")
    return task


@app.command("eval")
def eval_cmd(
    reference: str = typer.Argument(..., help="Reference task: a KernelBench-format file, or a built-in task name."),
    candidate: Path = typer.Argument(..., help="Candidate file defining ModelNew."),
    device: str = typer.Option("cuda", help="cpu, cuda or cuda:N."),
    trials: int = typer.Option(100, help="Correctness trials with fresh random inputs."),
    baseline: str = typer.Option("eager", help="eager | compile | compile-reduce-overhead | cuda-graph."),
    budget_s: float = typer.Option(10.0, "--budget-s", help="Timing budget in seconds (stops earlier once the interval is tight)."),
    size: str = typer.Option("full", help="full | small (the task's small sizes, for CPU tests)."),
    strict: bool = typer.Option(False, help="Reject on every guard finding, not only on those that change the measurement."),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Write the result as JSON here ('-' for stdout)."),
    profile: bool = typer.Option(False, help="Also collect Nsight Compute metrics and ptxas resources of the candidate's kernels."),
    kernel_check: str = typer.Option("auto", "--kernel-check", help="auto | always | never: list the kernels that ran (torch.profiler, "
                                     "3-6 s on a GPU); auto does it for speedups above 3x (those re-measured anyway)."),
    fresh_inputs: bool = typer.Option(True, "--fresh-inputs/--fixed-inputs", help="Fresh inputs in every timed round "
                                      "(defeats answers cached by input values), or four fixed sets rotated."),
    kernel_check_helper: Optional[bool] = typer.Option(None, "--kernel-check-helper/--no-kernel-check-helper",
                                                       help="Start the kernel check's profiler in a helper process beside the "
                                                       "correctness trials; timing waits up to 5 s for it. Default: on with "
                                                       "--kernel-check always, off with auto (the wait would be paid by every run)."),
) -> None:
    """Is CANDIDATE correct, is it honestly faster than REFERENCE, and by how much."""
    from cudaopt.evaluate import EvalOptions, evaluate
    from cudaopt.evaluate.summary import print_result
    from cudaopt.tasks.loader import TaskError

    task = _task_and_candidate(reference, candidate)
    try:
        options = EvalOptions(device=device, trials=trials, baseline=baseline, budget_s=budget_s, size=size, strict=strict,
                              kernel_check=kernel_check, fresh_inputs=fresh_inputs, kernel_check_helper=kernel_check_helper)
    except ValueError as e:
        _usage_error(str(e))
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            _usage_error("no CUDA device here; pass --device cpu (candidates in C++ or PyTorch) or run on a GPU machine")
    try:
        with console.status(f"evaluating {candidate.name} on {device} ...", spinner="dots"):
            result = evaluate(task, candidate, options)
    except TaskError as e:
        _usage_error(str(e))
    payload = result.to_dict()
    if profile:
        from cudaopt.profile import format_profile, profile_candidate

        with console.status("profiling ...", spinner="dots"):
            report = profile_candidate(task, candidate, device=options.device, size=size)
        payload["profile"] = report.to_dict()
    if json_path is not None:
        text = json.dumps(payload, indent=2)
        if str(json_path) == "-":
            sys.stdout.write(text + "\n")
        else:
            json_path.write_text(text + "\n")
    if str(json_path) != "-":
        print_result(result, console)
        if profile:
            console.print(f"profile: ncu {report.ncu_status}" + (f" ({report.ncu_reason})" if report.ncu_reason else "")
                          + f"; ptxas {report.ptxas_status}" + (f" ({report.ptxas_reason})" if report.ptxas_reason else ""))
            console.print(format_profile(report) or "")
    raise typer.Exit(0 if result.ok else 1)


@tasks_app.command("list")
def tasks_list(
    path: Optional[Path] = typer.Argument(None, help="A task file, folder or KernelBench checkout (default: the built-in suite)."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list of {name, level, path}."),
) -> None:
    """List tasks."""
    from cudaopt.tasks.loader import TaskError, builtin_tasks, discover_tasks

    try:
        tasks = discover_tasks(path) if path else builtin_tasks()
    except TaskError as e:
        _usage_error(str(e))
    if as_json:
        sys.stdout.write(json.dumps([t.to_dict() for t in tasks], indent=2) + "\n")
        return
    table = Table(title=f"{len(tasks)} tasks")
    for col in ("level", "name", "path"):
        table.add_column(col)
    for t in sorted(tasks, key=lambda t: (t.level, t.name)):
        table.add_row(str(t.level), t.name, str(t.path))
    console.print(table)


@tasks_app.command("check")
def tasks_check(
    path: Optional[Path] = typer.Argument(None, help="A task file, folder or KernelBench checkout (default: the built-in suite)."),
    size: str = typer.Option("small", help="small | full: the sizes to run the references at."),
    device: str = typer.Option("cpu", help="Where to run the references."),
    as_json: bool = typer.Option(False, "--json", help="Print the findings as JSON."),
) -> None:
    """Flag tasks on which a zero or constant output would pass the tolerance (degenerate tasks)."""
    from cudaopt.tasks.check import check_tasks
    from cudaopt.tasks.loader import TaskError, builtin_tasks, discover_tasks

    try:
        tasks = discover_tasks(path) if path else builtin_tasks()
    except TaskError as e:
        _usage_error(str(e))
    reports = check_tasks(tasks, size=size, device=device)
    bad = [r for r in reports if not r.ok]
    if as_json:
        sys.stdout.write(json.dumps([r.to_dict() for r in reports], indent=2) + "\n")
    else:
        table = Table(title=f"{len(reports)} tasks checked, {len(bad)} flagged")
        for col in ("task", "verdict", "detail"):
            table.add_column(col)
        for r in reports:
            table.add_row(r.name, "[green]ok[/]" if r.ok else "[red]flagged[/]", r.detail)
        console.print(table)
    raise typer.Exit(1 if bad else 0)


@app.command("optimize")
def optimize_cmd(
    reference: Optional[str] = typer.Argument(None, help="Task file or built-in task name (with --suite: a task folder; default the built-in suite)."),
    llm: Optional[str] = typer.Option(None, help="replay:FILE.jsonl | http(s)://HOST/v1[#MODEL] | openai:MODEL | transformers:MODEL. None: built-in proposers only."),
    budget: int = typer.Option(32, help="Candidates to evaluate (per task with --suite)."),
    rounds: int = typer.Option(8, help="Rounds of sample -> prompt -> generate -> evaluate."),
    device: str = typer.Option("cuda", help="cpu, cuda or cuda:N; several, comma-separated (cuda:0,cuda:1), evaluate concurrently."),
    db: Optional[str] = typer.Option(None, help="SQLAlchemy URL or SQLite file of the exemplar database (default: in --out)."),
    out: Optional[Path] = typer.Option(None, help="Run folder: best kernel, report, plot, database."),
    resume: bool = typer.Option(False, help="Continue the run stored in the database."),
    suite: bool = typer.Option(False, help="Optimize every task of a folder and report the seeds' table per level."),
    size: str = typer.Option("full", help="full | small (CPU tests)."),
    trials: int = typer.Option(100, help="Correctness trials per candidate."),
    budget_s: float = typer.Option(10.0, "--budget-s", help="Timing budget per candidate."),
    knowledge: Optional[Path] = typer.Option(None, help="A knowledge store (cudaopt knowledge add): its best passages go into each prompt."),
    proposers: Optional[str] = typer.Option(None, help="Built-in proposers for round 0, comma-separated (compile, compile-max-autotune, "
                                            "compile-reduce-overhead, cuda-graph); 'none' for none. Default: those that fit the device."),
    level: Optional[list[int]] = typer.Option(None, help="With --suite: only tasks of this level (repeatable)."),
    only: Optional[str] = typer.Option(None, "--filter", help="With --suite: only tasks whose name contains this."),
    report_only: bool = typer.Option(False, help="With --suite: evaluate nothing; write the report and plot of the stored run again "
                                     "(after a run was killed before it could)."),
) -> None:
    """Search for a faster kernel (evolutionary, frozen model); write the best kernel and a report.

    Ctrl-C or SIGTERM (e.g. from `timeout`) stops it cleanly: what was evaluated is stored, the report is
    written, and --resume continues."""
    from cudaopt.evaluate import EvalOptions
    from cudaopt.search import optimize, optimize_suite
    from cudaopt.tasks.loader import TaskError

    devices = [d.strip() for d in device.split(",") if d.strip()]
    try:
        options = EvalOptions(device=devices[0], size=size, trials=trials, budget_s=budget_s)
        for d in devices[1:]:
            EvalOptions(device=d)
    except (ValueError, IndexError) as e:
        _usage_error(str(e) or "give a device: cpu, cuda or cuda:N")
    if reference is not None and not suite:  # a wrong task is reported the same on every machine, before the device
        from cudaopt.tasks.loader import resolve_task

        try:
            resolve_task(reference)
        except TaskError as e:
            _usage_error(str(e))
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            _usage_error("no CUDA device here; pass --device cpu or run on a GPU machine")
    pool_devices = devices if len(devices) > 1 else None
    chosen: tuple[str, ...] | None = None
    if proposers is not None:
        from cudaopt.search.proposers import PROPOSERS

        chosen = () if proposers.strip().lower() == "none" else tuple(p.strip() for p in proposers.split(",") if p.strip())
        unknown = [p for p in chosen if p not in PROPOSERS]
        if unknown:
            _usage_error(f"unknown proposer {unknown[0]!r}; choose from {', '.join(PROPOSERS)} (or 'none')")
    if (level or only) and not suite:
        _usage_error("--level and --filter pick tasks of a --suite run; give --suite")
    if report_only and not suite:
        _usage_error("--report-only writes a --suite run's report again; give --suite (a single task's report is written on every stop)")
    builder = None
    if knowledge is not None:
        from cudaopt.retrieval import KnowledgeStore, RetrievalPromptBuilder

        if not (knowledge / "knowledge.sqlite").exists():
            _usage_error(f"{knowledge}: no knowledge store here; create one with `cudaopt knowledge add {knowledge} FOLDER`")
        builder = RetrievalPromptBuilder(store=KnowledgeStore(knowledge))
    from cudaopt.search.stopping import INTERRUPTED, sigterm_stops_search

    try:
        if suite:
            with sigterm_stops_search():
                res = optimize_suite(reference, llm=llm, budget=budget, rounds=rounds, device=options.device, db_url=db,
                                     out_dir=out or "cudaopt-runs/suite", resume=resume, options=options, devices=pool_devices,
                                     builder=builder, proposers=chosen, levels=tuple(level) if level else None,
                                     name_filter=only, report_only=report_only)
            if res.stopped:
                console.print(f"stopped: {res.stopped}")
            console.print(f"report: {res.report_path}")
        else:
            if reference is None:
                _usage_error("give a task file or built-in task name (or --suite)")
            with sigterm_stops_search():
                res = optimize(reference, llm=llm, budget=budget, rounds=rounds, device=options.device, db_url=db,
                               out_dir=out, resume=resume, options=options, devices=pool_devices, builder=builder,
                               proposers=chosen)
            best = f"{res.best_speedup:.2f}x" if res.best_speedup is not None else "none correct"
            console.print(f"best: {best}  kernel: {res.best_path}  report: {res.report_path}")
            if res.stopped == INTERRUPTED:
                console.print(f"stopped: {res.stopped}")
        if res.stopped == INTERRUPTED:
            raise typer.Exit(130)
    except TaskError as e:
        _usage_error(str(e))
    except ValueError as e:  # a bad --llm spec or option
        _usage_error(str(e))


@app.command("bench-gemm")
def bench_gemm_cmd(
    shapes: str = typer.Option("grid", help="grid | sample:N[:seed] | offgrid:N[:seed] | FILE of 'M N K' lines | MxNxK,..."),
    mode: str = typer.Option("offline", help="offline (back to back) | server (random idle gaps, not timed)."),
    timing: str = typer.Option("gpu", help="gpu (events/graph replay) | call (host time of one Python call)."),
    out: Path = typer.Option(Path("runs/gemm"), help="Folder for CSV, Markdown and PNG, and the per-shape log shapes.jsonl."),
    table: Optional[str] = typer.Option(None, help="Tuned table JSON (default: the shipped table for this GPU, by its name; else the H200 table)."),
    rounds: int = typer.Option(15),
    budget_s: Optional[float] = typer.Option(None, "--budget-s", help="Start no new shape after this many seconds; the rest waits for the next run."),
    resume: bool = typer.Option(True, "--resume/--no-resume", help="Skip shapes already in OUT/shapes.jsonl (--no-resume starts the log afresh)."),
    shard: Optional[str] = typer.Option(None, help="i/n: only the shapes whose index % n == i."),
    order: str = typer.Option("list", help="list (the shapes' order; the grid's is M, then N, then K) | shuffled "
                              "(seeded: a run the budget cuts short leaves out every kind of shape alike)."),
    seed: int = typer.Option(0, min=0, help="Seeds the shuffled order, the inputs and each shape's round orders: "
                             "grids meant as independent readings take different seeds (a resumed run keeps its own)."),
) -> None:
    """CUDA-L2: our HGEMM family vs torch.matmul, cuBLAS and cuBLASLt over a shape grid.

    gpu timing clears L2 before every timed replay (CUDAOPT_GEMM_L2_FLUSH=0: it does not, as before session 53)."""
    from cudaopt.gemm.cli import bench_gemm, check_args

    try:
        check_args(shapes, mode, timing, shard, budget_s, rounds, order)
    except ValueError as e:
        _usage_error(str(e))
    if table is not None and not Path(table).is_file():
        _usage_error(f"no table at {table}: give a tuned table's path with --table (or leave it out for the shipped one)")
    _need_cuda()
    path = bench_gemm(shapes=shapes, mode=mode, timing=timing, out_dir=out, table=table, rounds=rounds,
                      budget_s=budget_s, resume=resume, shard=shard, order=order, seed=seed)
    console.print(f"results in {path}")


@app.command("tune-gemm")
def tune_gemm_cmd(
    shapes: str = typer.Option("grid", help="grid | sample:N[:seed] | offgrid:N[:seed] | FILE | MxNxK,..."),
    out: Path = typer.Option(Path("runs/gemm/tuned.json"), help="Tuned table to write or merge into (rewritten after every shape)."),
    rounds: int = typer.Option(5),
    budget_s: Optional[float] = typer.Option(None, "--budget-s", help="Start no new shape after this many seconds; the rest waits for the next run."),
    merge: bool = typer.Option(True, "--merge/--no-merge", help="Keep the table's entries and skip its shapes (--no-merge starts afresh)."),
    retune: bool = typer.Option(False, "--retune", help="Tune shapes already in the table again."),
    shard: Optional[str] = typer.Option(None, help="i/n: only the shapes whose index % n == i."),
) -> None:
    """Search the HGEMM configurations per shape on the GPU; write the dispatcher's table."""
    from cudaopt.gemm.cli import check_args, tune_gemm

    try:
        check_args(shapes, shard=shard, budget_s=budget_s, rounds=rounds)
    except ValueError as e:
        _usage_error(str(e))
    _need_cuda()
    console.print(f"table: {tune_gemm(shapes=shapes, out=out, rounds=rounds, budget_s=budget_s, merge=merge, retune=retune, shard=shard)}")


@app.command("tune-gemm-fallbacks")
def tune_gemm_fallbacks_cmd(
    table: Path = typer.Option(..., help="The tuned table the pass starts from (e.g. src/cudaopt/gemm/tuned_h200.json)."),
    out: Path = typer.Option(Path("runs/gemm/tuned_lt.json"), help="Table to write (rewritten after every shape; may be --table)."),
    shapes: Optional[str] = typer.Option(None, help="Only these of the table's shapes: grid | sample:N | FILE | MxNxK,..."),
    budget_s: Optional[float] = typer.Option(None, "--budget-s", help="Start no new shape after this many seconds; a rerun continues."),
    recheck: bool = typer.Option(False, "--recheck", help="Check shapes the output already records as checked again."),
    ours_back: bool = typer.Option(False, "--ours-back", help="First time our kernel of record against the fallback "
                                   "of every shape handed to torch.matmul or cuBLASLt, and take back the ones ours "
                                   "now win (after a kernel change); the cuBLASLt pass then checks those again."),
) -> None:
    """Hand the shapes where one of cuBLASLt's algorithms beats the table's choice to that algorithm."""
    from cudaopt.gemm.cli import check_args
    from cudaopt.gemm.tune import run_lt_fallbacks, run_ours_back

    try:
        shape_list = check_args(shapes, budget_s=budget_s) if shapes else None
    except ValueError as e:
        _usage_error(str(e))
    if not table.is_file():
        _usage_error(f"no table at {table}: pass the tuned table to start from with --table")
    _need_cuda()
    if ours_back:
        import time

        t0 = time.perf_counter()
        run_ours_back(table, out, shapes=shape_list, budget_s=budget_s, recheck=recheck)
        table = out  # the cuBLASLt pass continues from what the ours-back pass wrote
        if budget_s is not None:
            budget_s = max(0.0, budget_s - (time.perf_counter() - t0))
    run_lt_fallbacks(table, out, shapes=shape_list, budget_s=budget_s, recheck=recheck)
    console.print(f"table: {out}")


@app.command("gemm-table-from-grids")
def gemm_table_from_grids_cmd(
    table: Path = typer.Option(..., help="The table the grids ran (e.g. src/cudaopt/gemm/tuned_h200.json)."),
    grids: list[Path] = typer.Option(..., "--grid", help="A grid run's shapes.csv (bench-gemm, offline, GPU timing); "
                                     "give two or more, from separate runs."),
    out: Path = typer.Option(..., help="Table to write (may be --table)."),
    margin: float = typer.Option(1.01, help="Move a shape only where every grid reads the new choice faster by this factor."),
    paired: bool = typer.Option(False, "--paired", help="Read each grid's ratios within rounds where it has them "
                                "(grids from session 40 on), not from its two medians."),
    bt: bool = typer.Option(False, "--bt", help="Choose the route of callers holding B transposed instead "
                            "(bt_lt_algo: a cuBLASLt TN algorithm or the default); grids run with "
                            "CUDAOPT_GEMM_BENCH_BT=1."),
    both: bool = typer.Option(False, "--both", help="Choose which layout hgemm reads when a caller hands it both "
                              "(hgemm(a, b, b_col_major=...), the seed's protocol): both_layouts \"bt\" where every "
                              "grid reads the B^T route faster; grids run with CUDAOPT_GEMM_BENCH_BT=1."),
    device: Optional[str] = typer.Option(None, "--device", help="The GPU the grids ran on (torch.cuda.get_device_name()), "
                                         "written as the new table's device where it is not the table's: hgemm takes "
                                         "a shipped table by it."),
) -> None:
    """A candidate table from grids already run (no GPU), to judge on a fresh grid.

    Moves shapes between ours, torch.matmul and cuBLASLt's autotuned algorithm where every grid agrees. With --bt, the
    B^T route instead; with --both, the layout read when handed both."""
    import json

    from cudaopt.gemm.grid_choice import (
        GridError,
        load_grid,
        mixed_protocols,
        rechoose,
        rechoose_both,
        rechoose_bt,
        table_data,
    )
    from cudaopt.gemm.tune import write_json_atomic

    if bt and both:
        _usage_error("--bt and --both choose different things: run the command once for each")

    if not table.is_file():
        _usage_error(f"no table at {table}: pass the table the grids ran with --table")
    if device is not None and not device.strip():
        _usage_error("--device is empty: give the GPU's name as torch.cuda.get_device_name() prints it")
    try:
        data = table_data(table)
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as e:  # (OSError: a .gz that is not gzip)
        _usage_error(f"{table}: not JSON ({e})")
    except GridError as e:
        _usage_error(str(e))
    try:
        loaded = [load_grid(g) for g in grids]
        entries, moves = (rechoose_both if both else rechoose_bt if bt else rechoose)(
            data["entries"], loaded, margin, paired)
    except GridError as e:
        _usage_error(str(e))
    if len(grids) < 2:
        err.print("warning: one grid: its noise decides the moves (give two or more runs)")
    if mixed := mixed_protocols(grids):
        err.print(mixed)
    write_json_atomic(out, {**data, "entries": entries, **({"device": device.strip()} if device else {})})
    if both:
        n_bt = sum(1 for e in entries if e.get("both_layouts") == "bt")
        console.print(f"{len(moves)} of {len(entries)} shapes moved (the layout read when handed both: "
                      f"{sum(mv.to == 'bt' for mv in moves)} to the B^T route, {sum(mv.to == 'nn' for mv in moves)} "
                      f"back to B as given; {n_bt} read the B^T route now); table: {out}. Judge it on a fresh B^T grid "
                      "(its dispatch_both column), not on these.")
    else:
        by: dict[tuple[str, str], int] = {}
        for mv in moves:
            key = (mv.was.split("_algo")[0] if mv.was.startswith("fallback:") or bt else "ours", mv.to)
            by[key] = by.get(key, 0) + 1
        console.print(f"{len(moves)} of {len(entries)} shapes moved{' (B^T route)' if bt else ''} "
                      f"({', '.join(f'{a} -> {b}: {n}' for (a, b), n in sorted(by.items())) or 'none'}); "
                      f"table: {out}. Judge it on a fresh grid, not on these.")
    if len(grids) >= 2:  # (session 40) what a fresh grid may show: each grid read on the choice of the others
        from cudaopt.gemm.grid_choice import held_out

        against = ("max; 'grid' is its dispatcher on B as given" if both else "TN, the B^T route" if bt else "max")
        console.print(f"Each grid left out, the table rechosen from the others and read on it (against cuBLASLt "
                      f"autotuned {against}):")
        for n_moves, r in held_out(data["entries"], loaded, margin, paired=paired, bt=bt, both=both):
            _print_reading(grids[r.grid], r, f"{n_moves} moves chosen from the others; ")


@app.command("gemm-table-for-gpu")
def gemm_table_for_gpu_cmd(
    out: Path = typer.Option(Path("runs/gemm/this_gpu"), help="Folder for the grids and the table (rerun to continue)."),
    grids: int = typer.Option(2, help="Whole-grid runs to choose from (on an H100 about 3 minutes each at 10 rounds with the B^T route or 20 without it); two or more."),
    rounds: int = typer.Option(20, help="Interleaved rounds per shape in each grid."),
    margin: float = typer.Option(1.01, help="Move a shape only where every grid reads the new choice faster by this factor."),
    bt: bool = typer.Option(True, "--bt/--no-bt", help="Also time hgemm's B^T route (nn.Linear's layout) and rechoose "
                            "its cuBLASLt TN algorithms (the base table's name another card's kernels)."),
    bt_margin: float = typer.Option(1.02, help="The B^T route's margin, read within rounds (paired)."),
    verify: int = typer.Option(2, help="Then time the moved shapes under the base table and the proposal alternately, "
                               "this many times, and send back any move that reads slower (0: keep every move)."),
) -> None:
    """A kernel table for this GPU, rechosen from grids run here.

    The shipped table's grid is run here --grids times, then each shape moved between ours, torch.matmul and
    cuBLASLt's algorithms where every grid agrees (as gemm-table-from-grids), and its B^T route rechosen the same way
    (as gemm-table-from-grids --bt), each move then checked on its own shape against the base table's choice
    (--verify), labelled with this GPU."""
    from cudaopt.gemm.cli import check_table_for_gpu_args, table_for_gpu

    try:
        check_table_for_gpu_args(grids, rounds, margin, bt_margin, verify)
    except ValueError as e:
        _usage_error(str(e))
    _need_cuda()
    import torch

    from cudaopt.gemm import _table_for_device
    from cudaopt.gemm.dispatch import table_path

    _table_for_device(torch)  # (the shipped table hgemm takes on this GPU, or CUDAOPT_GEMM_TABLE's)
    device = torch.cuda.get_device_name()
    if grids < 2:
        err.print("warning: one grid: its noise decides the moves (give two or more)")
    try:
        table, moved, bt_moved, both_moved, back = table_for_gpu(
            out, device, table_path(), grids, rounds, margin, bt, bt_margin, verify=verify,
            log=lambda s: console.print(s, markup=False, highlight=False))
    except (ValueError, OSError) as e:
        _usage_error(str(e))
    checked = (f" ({back} more sent back: slower on their own shapes against the base table's choice)" if verify
               else " (not checked shape by shape: --verify 0)")
    console.print(f"{moved} shapes moved{f', {bt_moved} B^T routes, {both_moved} read B^T when handed both' if bt else ''}"
                  f"{checked}; table: {table} (tuned "
                  f"on {device}); use it: export CUDAOPT_GEMM_TABLE={table.resolve()}")


def _print_reading(grid: Path, r, lead: str = "") -> None:
    """One line of a table read on a grid (grid_choice.TableReading)."""
    name = "/".join(grid.parts[-2:])
    if not r.shapes:
        console.print(f"  {name}: {lead}no shape read (no cuBLASLt autotuned times in this grid, or none of the "
                      "table's choices timed)")
        return
    how = f"{r.same} as the grid ran them, {r.columns} from its other columns"
    how += f", {r.approx} on cuBLASLt's autotuned NN time for an algorithm it does not name" if r.approx else ""
    how += f"; {r.unread} not timed there, left out" if r.unread else ""
    console.print(f"  {name}: {lead}{r.shapes} shapes read ({how}); under 0.98x {r.floor_grid} -> {r.floor_table}; "
                  f"mean {r.mean_grid:+.2%} -> {r.mean_table:+.2%} (the grid's dispatcher -> the table)")


@app.command("gemm-table-on-grids")
def gemm_table_on_grids_cmd(
    table: Path = typer.Option(..., help="A candidate table (.json or .json.gz)."),
    grids: list[Path] = typer.Option(..., "--grid", help="A grid run's shapes.csv (bench-gemm, offline, GPU timing), "
                                     "best one the candidate was not chosen from."),
    bt: bool = typer.Option(False, "--bt", help="Read the B^T route against cuBLASLt autotuned TN instead (grids run "
                            "with CUDAOPT_GEMM_BENCH_BT=1)."),
) -> None:
    """Read a candidate table on grids already run (no GPU).

    Per grid: its floor count and mean against cuBLASLt autotuned max (--bt: the B^T route against cuBLASLt autotuned
    TN) beside the grid's own dispatcher, from the columns each grid timed."""
    import json

    from cudaopt.gemm.grid_choice import GridError, load_grid, read_table, read_table_bt, table_data

    if not table.is_file():
        _usage_error(f"no table at {table}: give a tuned table's path with --table")
    try:
        data = table_data(table)
        readings = [(read_table_bt if bt else read_table)(data["entries"], load_grid(g), i)
                    for i, g in enumerate(grids)]
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as e:
        _usage_error(f"{table}: not a JSON table ({e})")
    except (GridError, KeyError, ValueError) as e:
        _usage_error(str(e))
    console.print(f"{table} read on {len(grids)} grid(s), against cuBLASLt autotuned "
                  f"{'TN (the B^T route)' if bt else 'max'}:")
    for g, r in zip(grids, readings):
        _print_reading(g, r)


@app.command("serve")
def serve_cmd(
    port: int = typer.Option(8000, min=0, max=65535, help="Port to listen on (0: any free port)."),
    host: str = typer.Option("127.0.0.1", help="Address to bind; anything but loopback needs --api-key."),
    device: str = typer.Option("cuda", "--device", help="cpu | cpu*N | cuda (every GPU) | cuda:0,cuda:1"),
    api_key: Optional[str] = typer.Option(None, envvar="CUDAOPT_API_KEY", help="Key clients send (X-API-Key or Bearer)."),
    pool: str = typer.Option("local", help="local (one worker per device here) | ray (one actor per GPU of a Ray cluster)."),
    ray_address: Optional[str] = typer.Option(None, help="Ray cluster address for --pool ray."),
) -> None:
    """The evaluator pool as an HTTP service: POST /evaluate, /evaluate/batch, /jobs; GET /health, /queue, /."""
    from cudaopt.service.server import serve

    try:
        serve(host=host, port=port, devices=device, api_key=api_key, pool=pool, ray_address=ray_address)
    except ValueError as e:
        _usage_error(str(e))


def _train_tasks(tasks: Optional[str]):
    from cudaopt.tasks.loader import builtin_tasks, discover_tasks

    return discover_tasks(tasks) if tasks else builtin_tasks()


@train_app.command("export")
def train_export(
    db: str = typer.Argument(..., help="Exemplar database: SQLAlchemy URL or SQLite file."),
    out: Path = typer.Argument(..., help="JSONL of (prompt, completion) pairs to write."),
    holdout: Optional[str] = typer.Option(None, help="Held-out tasks: a fraction (0.2), names (a,b) or @file."),
) -> None:
    """Export successful candidates as SFT pairs (one-shot prompt -> answer), for training elsewhere."""
    from cudaopt.train import export_sft

    try:
        console.print(f"wrote {export_sft(db, out, holdout=holdout)}")
    except FileNotFoundError as e:
        _usage_error(str(e))


@train_app.command("sft")
def train_sft_cmd(
    model: str = typer.Argument(..., help="Local model path or hub name your machine can reach."),
    data: str = typer.Argument(..., help="SFT JSONL, or an exemplar database to export from."),
    out: Path = typer.Option(Path("runs/train/sft"), help="Output folder (checkpoints, final model, report)."),
    lora: bool = typer.Option(False, help="Train LoRA adapters (peft) instead of all weights."),
    epochs: float = typer.Option(1.0),
    holdout: Optional[str] = typer.Option(None, help="Held-out tasks: a fraction, names or @file."),
    resume: bool = typer.Option(False, help="Continue from the last checkpoint in --out."),
) -> None:
    """Stage 1: supervised fine-tuning on successful candidates."""
    from cudaopt.train import train_sft

    try:
        res = train_sft(model, data, out, lora=lora, epochs=epochs, holdout=holdout, resume=resume)
    except FileNotFoundError as e:  # the data (a missing model is the hub library's own error, with its advice)
        _usage_error(str(e))
    console.print_json(json.dumps(res.to_dict(), default=str))


@train_app.command("self")
def train_self_cmd(
    model: str = typer.Argument(..., help="Local model path or hub name."),
    tasks: Optional[str] = typer.Option(None, help="Task folder or file (default: the built-in suite)."),
    out: Path = typer.Option(Path("runs/train/self"), help="Output folder."),
    iterations: int = typer.Option(3),
    samples_per_task: int = typer.Option(8),
    device: str = typer.Option("cuda", help="Where candidates are evaluated."),
    db: Optional[str] = typer.Option(None, help="Exemplar database every evaluated completion goes into."),
    holdout: Optional[str] = typer.Option(None),
    resume: bool = typer.Option(False),
) -> None:
    """Stage 2: generate, evaluate, keep the successes, fine-tune; report the success rate per iteration."""
    from cudaopt.evaluate import EvalOptions
    from cudaopt.train import train_self

    res = train_self(model, _train_tasks(tasks), out, iterations=iterations, samples_per_task=samples_per_task,
                     db_url=db, options=EvalOptions(device=device, timing=False), holdout=holdout, resume=resume)
    console.print_json(json.dumps(res.to_dict(), default=str))


@train_app.command("grpo")
def train_grpo_cmd(
    model: str = typer.Argument(..., help="Local model path or hub name."),
    tasks: Optional[str] = typer.Option(None, help="Task folder or file (default: the built-in suite)."),
    out: Path = typer.Option(Path("runs/train/grpo"), help="Output folder."),
    db: Optional[str] = typer.Option(None, help="Exemplar database (prompts are sampled from it as it grows)."),
    steps: int = typer.Option(100),
    group_size: int = typer.Option(8),
    k: float = typer.Option(1.5, help="Reward smoothing: clip the normalised reward to +-k."),
    epsilon: float = typer.Option(0.2, help="Clipping epsilon of the GRPO ratio."),
    beta: float = typer.Option(0.001, help="KL coefficient against the reference model (0 drops it)."),
    device: str = typer.Option("cuda", help="Where candidates are evaluated."),
    judge: Optional[str] = typer.Option(None, help="An --llm spec for the reward-check model (optional)."),
    holdout: Optional[str] = typer.Option(None),
    resume: bool = typer.Option(False),
    vllm: Optional[str] = typer.Option(None, "--vllm", help="Generate with vLLM through TRL: colocate (in the training "
                                       "processes) or server (a `trl vllm-serve` server); default: transformers."),
    vllm_url: Optional[str] = typer.Option(None, "--vllm-url", help="The vLLM server's base URL (with --vllm server)."),
) -> None:
    """Stage 3: contrastive GRPO with the evaluator's speedup as reward (smoothed, clipped)."""
    from cudaopt.evaluate import EvalOptions
    from cudaopt.train import train_grpo
    from cudaopt.train.grpo import vllm_overrides

    try:
        vllm_overrides(vllm, vllm_url)
    except ValueError as e:
        _usage_error(str(e))
    res = train_grpo(model, _train_tasks(tasks), out, db_url=db, steps=steps, group_size=group_size, k=k, epsilon=epsilon,
                     beta=beta, options=EvalOptions(device=device), judge=judge, holdout=holdout, resume=resume,
                     vllm=vllm, vllm_url=vllm_url)
    console.print_json(json.dumps(res.to_dict(), default=str))


@app.command("collect")
def collect_cmd(
    tasks: Optional[str] = typer.Argument(None, help="Task folder or file (default: the built-in suite)."),
    llm: list[str] = typer.Option(..., "--llm", help="A model spec, repeatable; NAME=SPEC names it (e.g. a=http://host/v1#m)."),
    attempts: int = typer.Option(20, help="Attempts per task and model."),
    successes: int = typer.Option(2, help="Stop a task/model pair after this many successes."),
    device: str = typer.Option("cuda"),
    db: Optional[str] = typer.Option(None, help="Exemplar database (default: in --out)."),
    out: Path = typer.Option(Path("cudaopt-runs/collect")),
    resume: bool = typer.Option(False),
) -> None:
    """CUDA-L1 stage 1: several models, up to T attempts per task, stop after S successes; all stored."""
    from cudaopt.collect import collect

    res = collect(_train_tasks(tasks), llm, attempts=attempts, successes=successes, device=device, db_url=db, out_dir=out, resume=resume)
    console.print(f"report: {res.report_path}")


@app.command("profile")
def profile_cmd(
    reference: str = typer.Argument(..., help="Task file or built-in task name."),
    candidate: Path = typer.Argument(..., help="Candidate file."),
    device: str = typer.Option("cuda"),
    no_ncu: bool = typer.Option(False, "--no-ncu", help="Only the compiler's resource report (-Xptxas -v)."),
) -> None:
    """Nsight Compute metrics of the candidate's own kernels (or the reason there are none) + ptxas resources."""
    from cudaopt.profile import format_profile, profile_candidate

    task = _task_and_candidate(reference, candidate)
    report = profile_candidate(task, candidate, device=device, ncu=not no_ncu)
    console.print(f"ncu: {report.ncu_status}" + (f" ({report.ncu_reason})" if report.ncu_reason else ""))
    console.print(f"ptxas: {report.ptxas_status}" + (f" ({report.ptxas_reason})" if report.ptxas_reason else ""))
    text = format_profile(report)
    if text:
        console.print(text)


@app.command("techniques")
def techniques_cmd(
    db: str = typer.Argument(..., help="Exemplar database (SQLAlchemy URL or SQLite file)."),
    out: Path = typer.Option(Path("runs/techniques"), help="Folder for techniques.md/.json/.png."),
) -> None:
    """Which techniques the fastest stored kernels use, per task and level, and how each relates to speedup."""
    from cudaopt.analysis import technique_report

    try:
        console.print(f"report: {technique_report(db, out, console=console)}")
    except FileNotFoundError as e:
        _usage_error(str(e))


@app.command("ablation")
def ablation_cmd(
    tasks: Optional[str] = typer.Argument(None, help="Task folder or file (default: the built-in suite)."),
    llm: str = typer.Option(..., help="The model spec every variant uses."),
    budget: int = typer.Option(8, help="Candidates per task and variant."),
    device: str = typer.Option("cuda"),
    holdout: Optional[str] = typer.Option(None, help="Held-out tasks: a fraction, names or @file."),
    out: Path = typer.Option(Path("cudaopt-runs/ablation")),
) -> None:
    """The seeds' ablations on one budget: random / bucket / island sampling, with and without exemplars."""
    from cudaopt.ablation import run_ablation

    res = run_ablation(_train_tasks(tasks), llm=llm, budget=budget, device=device, holdout=holdout, out_dir=out)
    console.print(f"report: {res.report_path}")


@knowledge_app.command("add")
def knowledge_add(
    store: Path = typer.Argument(..., help="The store's folder (created if missing)."),
    folders: list[Path] = typer.Argument(..., help="Folders of documents and code you are allowed to use."),
) -> None:
    """Index the text files of FOLDERS into STORE (changed files are re-read, unchanged ones skipped)."""
    from cudaopt.retrieval import KnowledgeStore

    for folder in folders:  # all checked before the store is made
        if not folder.is_dir():
            _usage_error(f"{folder}: not a folder; give folders of text files")
    ks = KnowledgeStore(store)
    for folder in folders:
        r = ks.add_folder(folder)
        console.print(f"{folder}: {r.added} files added, {r.unchanged} unchanged, {r.skipped} skipped, {r.passages} passages")


@knowledge_app.command("search")
def knowledge_search(
    store: Path = typer.Argument(..., help="The store's folder."),
    query: str = typer.Argument(..., help="What to look for."),
    k: int = typer.Option(4, help="How many passages."),
) -> None:
    """The passages of STORE that best match QUERY, with their sources."""
    from cudaopt.retrieval import KnowledgeStore

    if not (store / "knowledge.sqlite").exists():
        _usage_error(f"{store}: no knowledge store here; create one with `cudaopt knowledge add {store} FOLDER`")
    for p in KnowledgeStore(store).search(query, k):
        console.print(f"[bold]{p.source}[/] (score {p.score:.2f})")
        console.print(p.text.strip()[:600], highlight=False, markup=False)


def _need_cuda() -> None:
    import torch

    if not torch.cuda.is_available():
        _usage_error("this command needs a CUDA GPU (sm_90: an H200 or H100 for the shipped tables); run it on a machine with one")


def main() -> None:
    """The console entry point: the app, with a bad task or model spec that a command did not catch itself answered
    in one line (exit 2) instead of a traceback."""
    from cudaopt.llm.base import LLMError
    from cudaopt.tasks.loader import TaskError

    try:
        app()
    except (TaskError, LLMError) as e:
        err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False)
        sys.exit(2)


if __name__ == "__main__":
    main()
