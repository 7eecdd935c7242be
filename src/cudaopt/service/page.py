"""The status page at `/`: the queue and the most recent results, refreshed every few seconds."""

from __future__ import annotations

import html
import time

from cudaopt.pool.local import Job

_STYLE = """
body { font: 14px system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
td, th { padding: 3px 10px; border-bottom: 1px solid #ddd; text-align: left; }
.ok { color: #080; } .bad { color: #b00; } .muted { color: #888; }
"""


def _age(t: float | None) -> str:
    return "" if t is None else f"{time.time() - t:.0f} s ago"


def _job_row(job: Job) -> str:
    s = job.summary()
    status = s["status"] or s["state"]
    css = "ok" if status == "ok" else ("bad" if s["status"] else "muted")
    speedup = f"{s['speedup']:.2f}x" if s["speedup"] is not None else ""
    message = job.result().message if job.done() and not job.cancelled() else ""
    esc = [html.escape(str(c)) for c in (s["id"], s["task"], s["device"] or "")]
    badge = f'<span class="{css}">{html.escape(status)}</span>'
    rest = [html.escape(c) for c in (speedup, message[:120], _age(s["finished_at"] or s["started_at"]))]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in [*esc, badge, *rest]) + "</tr>"


def render_page(status: dict, recent: list[Job]) -> str:
    running = "".join(
        f"<tr><td>{html.escape(r['id'])}</td><td>{html.escape(r['task'])}</td><td>{html.escape(str(r['device']))}</td>"
        f"<td>{html.escape(r['state'])}</td><td>{_age(r['started_at'])}</td></tr>" for r in status["running"])
    rows = "".join(_job_row(j) for j in reversed(recent))
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="5"><title>cudaopt evaluation service</title>
<style>{_STYLE}</style></head><body>
<h1>cudaopt evaluation service</h1>
<p>{status['workers']} workers ({html.escape(', '.join(status['devices']))}) &middot; {status['queued']} queued &middot;
{status['busy']} running &middot; {status['finished']} finished of {status['submitted']} submitted &middot;
{status['retried']} retried &middot; {status['evaluator_failures']} evaluator failures</p>
<h2>Running</h2>
<table><tr><th>job</th><th>task</th><th>device</th><th>state</th><th>started</th></tr>{running}</table>
<h2>Recent results</h2>
<table><tr><th>job</th><th>task</th><th>device</th><th>status</th><th>speedup</th><th>message</th><th>finished</th></tr>
{rows}</table>
<p class="muted">JSON: <code>GET /queue</code>, <code>POST /evaluate</code>, <code>POST /evaluate/batch</code>,
<code>POST /jobs</code>, <code>GET /jobs/{{id}}?wait=30</code></p>
</body></html>"""
