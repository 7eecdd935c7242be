"""A small OpenAI-compatible chat server (stdlib HTTP) that answers from a replay file.

It speaks enough of the protocol for the `openai` client: POST /v1/chat/completions (with usage and
`n`), GET /v1/models. Tests run it on 127.0.0.1 and point the HTTP backend at it; on a GPU machine it
stands in for vLLM when replaying recorded answers:

    python -m cudaopt.llm.replay_server answers.jsonl --port 8011
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cudaopt.llm.replay import ReplayBook, completion_from


class ReplayServer:
    """Start with `with ReplayServer(path) as srv:`; `srv.base_url` is what the client needs.
    `fail_first=k` answers the first k chat requests with HTTP 503 (to exercise client retries)."""

    def __init__(self, replay: str | Path | ReplayBook, host: str = "127.0.0.1", port: int = 0,
                 model: str = "replay-model", fail_first: int = 0):
        self.book = replay if isinstance(replay, ReplayBook) else ReplayBook.from_file(replay)
        self.model = model
        self.requests = 0  # chat requests seen, failed ones included
        self._fail_left = fail_first
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer((host, port), self._handler())
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> "ReplayServer":
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="replay-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "ReplayServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _chat(self, body: dict) -> tuple[int, dict]:
        with self._lock:
            self.requests += 1
            if self._fail_left > 0:
                self._fail_left -= 1
                return 503, {"error": {"message": "replay server: injected failure", "type": "server_error"}}
        messages = body.get("messages") or []
        prompt = next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), "")
        if not isinstance(prompt, str):  # content parts: keep the text ones
            prompt = "".join(p.get("text", "") for p in prompt if isinstance(p, dict))
        choices, p_tok, c_tok = [], 0, 0
        for i in range(int(body.get("n") or 1)):
            c = completion_from(self.book.answer(prompt), prompt)
            if c.error:
                return 404, {"error": {"message": c.error, "type": "invalid_request_error"}}
            choices.append({"index": i, "message": {"role": "assistant", "content": c.text}, "finish_reason": "stop"})
            p_tok, c_tok = c.prompt_tokens, c_tok + c.completion_tokens
        return 200, {
            "id": "chatcmpl-" + uuid.uuid4().hex[:12], "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model") or self.model, "choices": choices,
            "usage": {"prompt_tokens": p_tok, "completion_tokens": c_tok, "total_tokens": p_tok + c_tok},
        }

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _send(self, code: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802 - http.server's naming
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": server.model, "object": "model", "created": 0, "owned_by": "cudaopt"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self):  # noqa: N802
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                except json.JSONDecodeError:
                    return self._send(400, {"error": {"message": "body is not JSON"}})
                self._send(*server._chat(body))

            def log_message(self, *args) -> None:  # keep test and search output clean
                pass

        return Handler


def main() -> None:
    ap = argparse.ArgumentParser(description="Serve recorded answers over the OpenAI chat protocol.")
    ap.add_argument("replay", help="JSONL file of {task, response} records")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8011)
    a = ap.parse_args()
    srv = ReplayServer(a.replay, a.host, a.port)
    print(f"serving {a.replay} at {srv.base_url}", flush=True)
    srv.httpd.serve_forever()


if __name__ == "__main__":
    main()
