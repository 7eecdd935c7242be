"""Send many evaluations to a running service at once, the three ways a client can (for load tests and
the throughput benchmark): a third as POST /evaluate, a third as jobs polled with ?wait, a third as one
or more POST /evaluate/batch."""

from __future__ import annotations

import asyncio

import httpx

from cudaopt.service.requests import MAX_BATCH


async def _send_all(url: str, requests: list[dict], api_key: str | None, health_checks: int) -> tuple[list[dict], list[int]]:
    headers = {"X-API-Key": api_key} if api_key else {}
    limits = httpx.Limits(max_connections=len(requests) + 16, max_keepalive_connections=len(requests) + 16)
    async with httpx.AsyncClient(base_url=url, timeout=3600, limits=limits, headers=headers) as client:

        async def direct(body: dict) -> dict:
            r = await client.post("/evaluate", json=body)
            r.raise_for_status()
            return r.json()

        async def as_job(body: dict) -> dict:
            r = await client.post("/jobs", json=body)
            r.raise_for_status()
            job_id = r.json()["id"]
            while True:
                view = (await client.get(f"/jobs/{job_id}", params={"wait": 30})).json()
                if view["result"] is not None:
                    return view["result"]

        async def batch(bodies: list[dict]) -> list[dict]:
            out: list[dict] = []
            for part in await asyncio.gather(*(client.post("/evaluate/batch", json=bodies[i:i + MAX_BATCH])
                                               for i in range(0, len(bodies), MAX_BATCH))):
                part.raise_for_status()
                out += part.json()
            return out

        async def health_while_busy() -> int:
            await asyncio.sleep(0.5)
            return (await client.get("/health")).status_code

        n = len(requests) // 3
        first, second, third, health = await asyncio.gather(
            asyncio.gather(*(direct(b) for b in requests[:n])),
            asyncio.gather(*(as_job(b) for b in requests[n:2 * n])),
            batch(requests[2 * n:]) if requests[2 * n:] else asyncio.sleep(0, []),
            asyncio.gather(*(health_while_busy() for _ in range(health_checks))),
        )
    return list(first) + list(second) + list(third), list(health)


def send_all(url: str, requests: list[dict], api_key: str | None = None, health_checks: int = 3
             ) -> tuple[list[dict], list[int]]:
    """All `requests` at once; returns the results in request order, and the status codes of the
    GET /health calls made while they ran."""
    return asyncio.run(_send_all(url, requests, api_key, health_checks))
