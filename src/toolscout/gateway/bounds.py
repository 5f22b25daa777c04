"""How much of an upstream result the gateway relays: at most ``max_result_bytes``.

An agent pays for every byte of a tool result in its context window, and a single upstream
answer can be megabytes (a file dump, a log, a database page). Over the limit the result is
cut down, not refused: the call has already run upstream, so an error would tell the agent a
call that may have changed something had failed, and a retry of a non-idempotent tool would
run it twice. The cut result says so in a last text block (``[toolscout] result truncated:
...``), so the agent knows it holds a part and can ask for less.

What is kept, in order: text blocks (the last one cut at a character boundary), then other
blocks (images, audio, embedded resources) only whole; ``structuredContent`` only when it fits
beside them. ``isError`` is kept as the server sent it. Sizes are those of the JSON the result
is relayed as (UTF-8 bytes), so the limit bounds what reaches the agent.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from toolscout.config.sections import DEFAULT_MAX_RESULT_BYTES

__all__ = ["DEFAULT_MAX_RESULT_BYTES", "bound_result", "result_size"]
#: Room kept for the notice and the JSON around the blocks.
NOTICE_ROOM = 400


def result_size(result: types.CallToolResult) -> int:
    """Bytes of ``result`` as the gateway relays it (compact JSON, UTF-8)."""
    return len(_dump(result).encode("utf-8"))


def bound_result(result: types.CallToolResult, max_bytes: int) -> types.CallToolResult:
    """``result`` when it fits in ``max_bytes`` (0: no limit), else a cut copy with a notice.

    Raises:
        Nothing.
    """
    if max_bytes <= 0:
        return result
    size = result_size(result)
    if size <= max_bytes:
        return result
    frame = result_size(result.model_copy(update={"content": [], "structured_content": None}))
    budget = max(max_bytes - NOTICE_ROOM - frame, 0)  # frame: _meta, isError and the like
    kept: list[types.ContentBlock] = []
    left_out = 0
    for block in result.content:
        cost = _size(block)
        if cost <= budget:
            kept.append(block)
            budget -= cost
        elif isinstance(block, types.TextContent) and budget > 0:
            cut = _cut_text(block.text, budget - (cost - _utf8(block.text)))
            if cut:
                kept.append(block.model_copy(update={"text": cut}))
            budget = 0
            left_out += 1
        else:
            left_out += 1
    structured = result.structured_content
    dropped_structured = False
    if structured is not None and _size_json(structured) > budget:
        structured, dropped_structured = None, True
    notice = (
        f"[toolscout] result truncated: the server answered {size:,} bytes, over the "
        f"gateway's limit of {max_bytes:,} (gateway.max_result_bytes); "
        f"{left_out} content block(s) cut or left out"
        + ("; structuredContent left out" if dropped_structured else "")
        + ". Ask for less (narrower arguments, a page, a filter) to see the rest."
    )
    kept.append(types.TextContent(type="text", text=notice))
    return result.model_copy(update={"content": kept, "structured_content": structured})


def _dump(model: Any) -> str:
    return str(model.model_dump_json(by_alias=True, exclude_none=True))


def _size(block: types.ContentBlock) -> int:
    return len(_dump(block).encode("utf-8")) + 1  # the comma between blocks


def _size_json(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _utf8(text: str) -> int:
    # Escapes in JSON make a block longer than its text; the slack is measured, not guessed.
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8"))


def _cut_text(text: str, budget: int) -> str:
    """The longest prefix of ``text`` whose JSON string fits ``budget`` bytes."""
    if budget <= 2:
        return ""
    lo, hi = 0, min(len(text), budget)  # a character takes at least one byte
    while lo < hi:  # binary search over characters: escapes make bytes per char uneven
        mid = (lo + hi + 1) // 2
        if _utf8(text[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]
