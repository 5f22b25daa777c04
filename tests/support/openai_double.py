"""TEST DOUBLE of an OpenAI-compatible chat API - the one stand-in the tests allow.

No useful LLM runs offline on this machine, so the LLM code paths are tested against this tiny
real HTTP server (stdlib ``http.server`` on a free loopback port). Each test scripts the
replies: ``good(payload)`` answers with that JSON as the assistant message, ``malformed()``
with text that is not JSON, ``status(500)`` with an HTTP error, ``hang()`` with no answer until
the server stops (so the client's timeout fires). Unscripted requests get the ``default``
reply. Every request body is recorded in ``requests``.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    kind: str  # "content" | "status" | "hang"
    content: str = ""
    status: int = 200


def good(payload: Any) -> Reply:
    return Reply("content", json.dumps(payload))


def malformed(text: str = "Sure! The skills are: email and maybe calendar {") -> Reply:
    return Reply("content", text)


def status(code: int) -> Reply:
    return Reply("status", status=code)


def hang() -> Reply:
    return Reply("hang")


class OpenAIDouble:
    """A scripted OpenAI-compatible ``/v1/chat/completions`` endpoint (test double)."""

    def __init__(self, default: Reply | None = None) -> None:
        self.default = default or malformed()
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            return self.replies.popleft() if self.replies else self.default

    def __enter__(self) -> OpenAIDouble:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()  # releases hanging handlers
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.endswith("/embeddings"):
                    self._send(200, embeddings(body))
                    return
                reply = double._next(body)
                if reply.kind == "hang":
                    double._stop.wait(timeout=30)
                    return
                if reply.kind == "status":
                    self._send(reply.status, {"error": {"message": "scripted failure"}})
                    return
                self._send(200, completion(body.get("model", "double"), reply.content))

            def _send(self, code: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

        return Handler


def completion(model: str, content: str) -> dict[str, Any]:
    """A minimal chat.completion body in the OpenAI wire format."""
    return {
        "id": "chatcmpl-double",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    }


def embeddings(body: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI ``/v1/embeddings`` body: 8-d vectors of letter counts (a, e, i, o, u, s, t, r).

    Deterministic and crude, but texts sharing letters get similar vectors, which is all the
    remote-embedder tests need to check the wiring.
    """
    inputs = body.get("input") or []
    texts = [inputs] if isinstance(inputs, str) else list(inputs)
    data = [
        {
            "object": "embedding",
            "index": i,
            "embedding": [float(text.lower().count(c)) + 0.01 for c in "aeiourst"],
        }
        for i, text in enumerate(texts)
    ]
    usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
    return {"object": "list", "data": data, "model": body.get("model", "double"), "usage": usage}
