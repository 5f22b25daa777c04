"""A small REST API (FastAPI) served on a free local port for the OpenAPI tests: it serves its
own ``/openapi.json`` with an ``ETag`` (answering ``304`` to a matching ``If-None-Match``, and
recording each answer's status in ``app.state.document_answers``) and the same document without
validators at ``/unvalidated/openapi.json``; every wait for it is bounded."""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import uvicorn
from fastapi import FastAPI, Header, HTTPException, Query, Request, Response
from pydantic import BaseModel
from starlette.middleware.base import RequestResponseEndpoint

TOKEN = "s3cret-token"


class NewOrder(BaseModel):
    """An order to place."""

    item: str
    quantity: int = 1


def _serve_document_with_validators(app: FastAPI) -> None:
    app.state.document_answers = []

    @app.middleware("http")
    async def document_validators(request: Request, call_next: RequestResponseEndpoint) -> Response:
        if request.url.path == "/unvalidated/openapi.json":
            return Response(json.dumps(app.openapi()).encode(), media_type="application/json")
        if request.url.path != "/openapi.json":
            return await call_next(request)
        body = json.dumps(app.openapi()).encode()
        etag = f'"{hashlib.sha256(body).hexdigest()[:16]}"'
        if request.headers.get("if-none-match") == etag:
            app.state.document_answers.append(304)
            return Response(status_code=304, headers={"ETag": etag})
        app.state.document_answers.append(200)
        return Response(body, media_type="application/json", headers={"ETag": etag})


def make_app() -> FastAPI:
    app = FastAPI(title="Shop", version="1.0")
    orders: dict[int, dict[str, object]] = {}
    _serve_document_with_validators(app)

    @app.get("/users/{user_id}", operation_id="get_user", tags=["users"])
    def get_user(user_id: int, verbose: bool = False) -> dict[str, object]:
        """Look up a customer's profile by their user id."""
        if user_id == 404:
            raise HTTPException(status_code=404, detail="no such user")
        return {"id": user_id, "name": f"user{user_id}", "verbose": verbose}

    @app.get("/weather", operation_id="get_weather", tags=["weather"])
    def get_weather(city: Annotated[str, Query(description="city name")]) -> dict[str, str]:
        """Current weather forecast and temperature for a city."""
        return {"city": city, "forecast": "sunny"}

    @app.post("/orders", operation_id="create_order", tags=["orders"])
    def create_order(
        order: NewOrder, x_api_key: Annotated[str | None, Header()] = None
    ) -> dict[str, object]:
        """Place a new purchase order for an item in the shop."""
        if x_api_key != TOKEN:
            raise HTTPException(status_code=401, detail="bad or missing X-API-Key")
        number = len(orders) + 1
        orders[number] = order.model_dump()
        return {"order": number, **order.model_dump()}

    @app.delete("/orders/{order_id}", operation_id="cancel_order", tags=["orders"])
    def cancel_order(order_id: int) -> dict[str, object]:
        """Cancel an order that has not shipped yet."""
        return {"cancelled": order_id}

    @app.get("/slow", tags=["misc"])
    async def slow(seconds: float = 5.0) -> dict[str, str]:
        """Answer after a delay (for timeouts)."""
        await asyncio.sleep(seconds)
        return {"done": "yes"}

    @app.get("/big", tags=["misc"])
    def big(size: int = 100_000) -> str:
        """A large text answer."""
        return "x" * size

    return app


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(app: FastAPI | None = None, *, start_timeout: float = 15.0) -> Iterator[str]:
    """Serve ``app`` (default: :func:`make_app`) in a thread; yields its base URL."""
    port = free_port()
    config = uvicorn.Config(
        app or make_app(), host="127.0.0.1", port=port, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            server.should_exit = True
            raise RuntimeError(f"the test REST server did not start in {start_timeout}s")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
