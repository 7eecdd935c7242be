"""The HTTP face of an evaluator pool (FastAPI).

    GET  /health                 liveness (no key needed)
    GET  /queue                  the pool's status
    POST /evaluate               one request -> EvalResult.to_dict()
    POST /evaluate/batch         a list of requests -> a list of results, in order
    POST /jobs                   one request -> {"id"}, or a list -> {"ids"}
    GET  /jobs/{id}?wait=30      the job, with its result once done (waits up to `wait` seconds)
    DELETE /jobs/{id}            cancel a job that has not started
    GET  /                       a page with the queue and recent results

The app does not own the pool: whoever made the pool closes it (see `serve`).
"""

from __future__ import annotations

import asyncio
import collections
import json
import math
import secrets
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse

import cudaopt
from cudaopt.pool.local import EvaluatorPool, Job
from cudaopt.service.page import render_page
from cudaopt.service.requests import MAX_BODY_BYTES, EvaluationRequest, RequestError, parse_batch, parse_request

MAX_WAIT_S = 600.0  # the longest a GET /jobs/{id}?wait= holds a connection
KEEP_JOBS = 10_000  # finished jobs kept for polling, oldest dropped first
MAX_OUTSTANDING = 20_000  # queued + running; beyond it the service answers 503 rather than grow forever


def _finite(value: Any) -> Any:
    """Strict JSON has no NaN or infinity; such errors (e.g. max_abs_error of an output full of inf) are sent
    as the strings "nan", "inf", "-inf"."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


class StrictJSONResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        return json.dumps(_finite(content), allow_nan=False, separators=(",", ":")).encode()


def _job_view(job: Job) -> dict:
    d = job.summary()
    d["result"] = job.result().to_dict() if job.done() and not job.cancelled() else None
    return d


def create_app(pool: EvaluatorPool, *, api_key: str | None = None, max_body_bytes: int = MAX_BODY_BYTES,
               keep_jobs: int = KEEP_JOBS, max_outstanding: int = MAX_OUTSTANDING) -> FastAPI:
    app = FastAPI(title="cudaopt evaluation service", version=cudaopt.__version__,
                  default_response_class=StrictJSONResponse)
    jobs: collections.OrderedDict[str, Job] = collections.OrderedDict()

    def require_key(request: Request) -> None:
        if api_key is None:
            return
        given = request.headers.get("x-api-key") or ""
        auth = request.headers.get("authorization", "")
        if not given and auth.lower().startswith("bearer "):
            given = auth[7:].strip()
        if not given and request.url.path == "/":
            given = request.query_params.get("key", "")  # the page is opened in a browser
        if not secrets.compare_digest(given.encode(), api_key.encode()):
            raise HTTPException(401, "missing or wrong API key: send it in the X-API-Key header")

    async def read_json(request: Request) -> Any:
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > max_body_bytes:
            raise HTTPException(413, f"request body is {int(declared) / 1e6:.1f} MB; the limit is {max_body_bytes >> 20} MB")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > max_body_bytes:
                raise HTTPException(413, f"request body is over the {max_body_bytes >> 20} MB limit")
        try:
            return json.loads(body)
        except ValueError as e:
            raise HTTPException(400, f"request body is not valid JSON: {e}") from None

    def submit(requests: list[EvaluationRequest]) -> list[Job]:
        status = pool.status()
        if status["submitted"] - status["finished"] - status["cancelled"] + len(requests) > max_outstanding:
            raise HTTPException(503, f"the queue is full ({max_outstanding} evaluations outstanding); retry later")
        try:
            submitted = [pool.submit(r.reference, r.candidate, r.options, task=r.task) for r in requests]
        except RuntimeError as e:  # the pool is closing
            raise HTTPException(503, str(e)) from None
        for job in submitted:
            jobs[job.id] = job
        while len(jobs) > keep_jobs:
            oldest_id, oldest = next(iter(jobs.items()))
            if not oldest.done():
                break
            del jobs[oldest_id]
        return submitted

    def parsed(fn, body: Any):
        try:
            return fn(body)
        except RequestError as e:
            raise HTTPException(e.status_code, e.message) from None

    @app.get("/health")
    async def health():
        status = pool.status()
        return {"status": "ok" if not status["closed"] else "closing", "version": cudaopt.__version__,
                "workers": status["workers"], "devices": status["devices"]}

    @app.get("/queue", dependencies=[Depends(require_key)])
    async def queue():
        return {**pool.status(), "jobs_kept": len(jobs)}

    @app.post("/evaluate", dependencies=[Depends(require_key)])
    async def evaluate(request: Request):
        (job,) = submit([parsed(parse_request, await read_json(request))])
        return (await asyncio.wrap_future(job)).to_dict()

    @app.post("/evaluate/batch", dependencies=[Depends(require_key)])
    async def evaluate_batch(request: Request):
        batch = submit(parsed(parse_batch, await read_json(request)))
        results = await asyncio.gather(*(asyncio.wrap_future(j) for j in batch))
        return [r.to_dict() for r in results]

    @app.post("/jobs", dependencies=[Depends(require_key)])
    async def create_jobs(request: Request):
        body = await read_json(request)
        if isinstance(body, list):
            return {"ids": [j.id for j in submit(parsed(parse_batch, body))]}
        (job,) = submit([parsed(parse_request, body)])
        return {"id": job.id}

    def find(job_id: str) -> Job:
        job = jobs.get(job_id)
        if job is None:
            raise HTTPException(404, f"no job {job_id!r}; it never existed or was dropped after {keep_jobs} newer jobs")
        return job

    @app.get("/jobs/{job_id}", dependencies=[Depends(require_key)])
    async def get_job(job_id: str, wait: float = 0.0):
        job = find(job_id)
        if wait > 0 and not job.done():
            try:
                await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(job)), timeout=min(wait, MAX_WAIT_S))
            except (asyncio.TimeoutError, asyncio.CancelledError):
                pass
        return _job_view(job)

    @app.delete("/jobs/{job_id}", dependencies=[Depends(require_key)])
    async def cancel_job(job_id: str):
        job = find(job_id)
        if job.cancel():
            job.state = "cancelled"
        return _job_view(job)

    @app.get("/", response_class=HTMLResponse, dependencies=[Depends(require_key)])
    async def page() -> HTMLResponse:
        return HTMLResponse(render_page(pool.status(), list(pool.recent)))

    return app
