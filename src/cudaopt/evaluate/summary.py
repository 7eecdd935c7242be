"""Readable terminal summaries of results."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from cudaopt.evaluate.result import EvalResult

_STATUS_STYLE = {"ok": "bold green", "incorrect": "bold red", "rejected": "bold magenta"}


def print_result(r: EvalResult, console: Console | None = None) -> None:
    console = console or Console()
    style = _STATUS_STYLE.get(r.status, "bold yellow")
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="dim")
    table.add_column()
    table.add_row("task", r.task)
    table.add_row("status", f"[{style}]{r.status}[/] (stage reached: {r.stage_reached})")
    if r.message:
        table.add_row("why", r.message)
    table.add_row("device", f"{r.device} {r.device_name}".strip())
    if r.trials:
        table.add_row("correctness", f"{r.trials_passed}/{r.trials} trials passed"
                      + (f", max abs error {r.max_abs_error:.3g}" if r.max_abs_error is not None else ""))
    if r.timing is not None:
        t = r.timing
        stable = "" if t.stable else " [yellow](unstable)[/]"
        verified = "" if t.verified is None else (" [green]verified[/]" if t.verified else " [red]not verified[/]")
        table.add_row("speedup", f"[bold]{t.speedup:.2f}x[/] vs {r.baseline}  95% CI [{t.ci_low:.3f}, {t.ci_high:.3f}]{stable}{verified}")
        table.add_row("times", f"reference {t.ref_time_us:.1f} us, candidate {t.cand_time_us:.1f} us; {t.rounds} paired rounds in {t.seconds:.1f} s ({t.window} window)")
    if r.precision:
        tf32 = r.precision.get("cuda.matmul.allow_tf32")
        table.add_row("precision", f"TF32 {'on' if tf32 else 'off'} for both sides (matmul precision {r.precision.get('float32_matmul_precision', '?')})")
    table.add_row("cost", f"{r.seconds:.1f} s wall" + (f", guards {r.guard_seconds:.2f} s" if r.guard_seconds else "") + (f", compile {r.compile_seconds:.1f} s" + (" (cached)" if r.compile_cached else "") if r.compile_seconds else ""))
    if r.phase_seconds:  # where the wall time went, stage by stage
        table.add_row("", "  ".join(f"{k} {v:.1f} s" for k, v in r.phase_seconds.items() if v >= 0.05))
    if r.kernels:  # from the profiler check: which device kernels the candidate's call launched
        table.add_row("kernels", ", ".join(k[:60] for k in r.kernels[:6]) + (f" (+{len(r.kernels) - 6} more)" if len(r.kernels) > 6 else ""))
    for n in r.notes:
        table.add_row("note", n[:200])
    console.print(table)
    if r.findings:
        ft = Table(title="findings", title_justify="left")
        for col in ("category", "layer", "message", "evidence"):
            ft.add_column(col, overflow="fold")
        for f in r.findings:
            ft.add_row(f.category, f.source, f.message, f.evidence[:80])
        console.print(ft)
    if r.error and r.status in ("compile_error", "runtime_error"):
        console.print("[dim]" + "\n".join(r.error.strip().splitlines()[-12:]) + "[/]", markup=True, highlight=False)
