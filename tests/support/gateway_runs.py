"""Running a gateway for one test body: its pool opened and closed around it, the error a call
raised, and a result's text."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
import mcp_types as types

from toolscout.gateway import Gateway

T = TypeVar("T")


def run(gateway: Gateway, body: Callable[[Gateway], Awaitable[T]]) -> T:
    async def main() -> T:
        async with gateway:
            return await body(gateway)

    return anyio.run(main)


def failure(gateway: Gateway, tool_id: str, args: dict[str, object]) -> Exception:
    """The error the call raised (caught inside the pool, where it happened)."""

    async def body(g: Gateway) -> Exception:
        try:
            await g.call(tool_id, args)
        except Exception as exc:
            return exc
        raise AssertionError(f"{tool_id} did not fail")

    return run(gateway, body)


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text
