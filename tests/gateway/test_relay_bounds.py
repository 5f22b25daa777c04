"""What the gateway relays is bounded: an upstream result over ``max_result_bytes`` reaches the
caller cut down with a notice, and a call that timed out while its answer was still coming does
not hold up the next call to that server."""

from __future__ import annotations

import time

import anyio
import mcp_types as types
import pytest

from support.upstreams import upstream_spec
from toolscout.engine import Engine
from toolscout.errors import UpstreamError
from toolscout.gateway import Gateway, Limits
from toolscout.gateway.bounds import bound_result, result_size

NOTICE = "[toolscout] result truncated"


def _texts(result: types.CallToolResult) -> list[str]:
    return [b.text for b in result.content if isinstance(b, types.TextContent)]


def test_a_result_over_the_limit_is_cut_with_a_notice_and_a_small_one_is_untouched(
    gw_engine: Engine,
) -> None:
    limits = {"up": Limits(timeout=20, max_result_bytes=5_000)}
    gateway = Gateway(gw_engine, [upstream_spec()], limits=limits)

    async def main() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with gateway as g:
            big = await g.call("up::blob", {"size": 200_000})
            small = await g.call("up::blob", {"size": 100})
            return big, small

    big, small = anyio.run(main)
    assert result_size(big) <= 5_000
    texts = _texts(big)
    assert texts[0] == "x" * len(texts[0]) and len(texts[0]) > 3_000
    assert texts[-1].startswith(NOTICE) and "5,000" in texts[-1]
    assert "gateway.max_result_bytes" in texts[-1] and not big.is_error
    assert _texts(small) == ["x" * 100]


def test_cutting_keeps_whole_blocks_first_and_drops_structured_content_that_does_not_fit() -> None:
    image = types.ImageContent(type="image", data="A" * 3_000, mime_type="image/png")
    result = types.CallToolResult(
        content=[types.TextContent(type="text", text="é\n" * 2_000), image],
        structured_content={"rows": list(range(2_000))},
        is_error=True,
    )
    cut = bound_result(result, 2_000)
    assert result_size(cut) <= 2_000
    assert cut.is_error and cut.structured_content is None
    assert not any(isinstance(b, types.ImageContent) for b in cut.content)
    assert _texts(cut)[0].startswith("é\n") and "structuredContent left out" in _texts(cut)[-1]
    assert bound_result(result, 0) is result  # 0: no limit


def test_a_call_timed_out_on_a_large_answer_does_not_hold_up_the_next_call(
    gw_engine: Engine,
) -> None:
    # 20 MB takes the SDK's reader far longer than the timeout; the next answer would queue
    # behind it on the same session.
    gateway = Gateway(gw_engine, [upstream_spec()], limits={"up": Limits(timeout=1.5)})

    async def main() -> float:
        async with gateway as g:
            await g.call("up::echo", {"text": "start"})
            up = g.pool.get("up")
            with pytest.raises(UpstreamError, match="no answer"):
                await g.call("up::blob", {"size": 20_000_000})
            # The fresh session starts off the caller's path, as soon as the call timed out.
            timed_out = time.monotonic()
            with anyio.fail_after(30):
                while up.starts < 2 or not up.has_session:
                    await anyio.sleep(0.02)
            print(f"fresh session up {time.monotonic() - timed_out:.2f} s after the timeout")
            start = time.monotonic()
            result = await g.call("up::echo", {"text": "next"})
            assert _texts(result) == ["next"]
            return time.monotonic() - start

    took = anyio.run(main)
    print(f"next call after a timed-out 20 MB answer: {took:.3f} s")
    assert took <= 1.0
