"""What the gateway's tools list costs a model, in tokens, and what fits in its budget.

A client hands the whole ``tools/list`` to the model on every turn, so the gateway keeps it
within a token budget: ``gateway.expose_tokens`` (default 1,500 for the whole list, its own
tools included), and never more than listing the configured servers' tools directly would
cost. Exposed tools go in most recently found first until the next would not fit.

Tokens are estimated from the JSON text, without a tokenizer at run time (tiktoken needs its
vocabulary file): see :data:`CHARS_PER_TOKEN`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolscout.models import Tool

#: Characters of ``json.dumps`` text per ``cl100k_base`` token, at most: whole tools lists run
#: 3.6 (the gateway's over mcp-server-time and mcp-server-git, ``python bench/context_size.py
#: --gateway`` prints it as ``chars/token``), single entries from 3.06 (the built-in catalog's
#: densest) and 3.20 (git_log). 3.0 is below every entry measured, so that estimates err on
#: the high side and the budget holds for any mix of tools.
CHARS_PER_TOKEN = 3.0
#: An exposed tool keeps its output schema only up to this many tokens: a short one tells the
#: model what comes back for little, a long one (a nested result object) costs more than the
#: model gains, and the upstream's result carries its structured content either way.
MAX_OUTPUT_SCHEMA_TOKENS = 40


def tokens(value: Any) -> int:
    """Estimated tokens of ``value`` as JSON text."""
    return math.ceil(len(json.dumps(value, ensure_ascii=False)) / CHARS_PER_TOKEN)


def listed_entry(name: str, tool: Tool) -> dict[str, Any]:
    """``tool`` as an entry of the gateway's tools list under ``name``."""
    entry: dict[str, Any] = {
        "name": name,
        "description": tool.description,
        "inputSchema": tool.input_schema or {"type": "object"},
    }
    if tool.annotations:
        entry["annotations"] = tool.annotations
    if tool.output_schema and tokens(tool.output_schema) <= MAX_OUTPUT_SCHEMA_TOKENS:
        entry["outputSchema"] = tool.output_schema
    return entry


def direct_entry(tool: Tool) -> dict[str, Any]:
    """``tool`` as its own server lists it (what a client configured with it loads)."""
    entry: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.input_schema or {"type": "object"},
    }
    if tool.annotations:
        entry["annotations"] = tool.annotations
    if tool.output_schema:
        entry["outputSchema"] = tool.output_schema
    return entry


def fit(
    own: Sequence[Mapping[str, Any]], candidates: Iterable[dict[str, Any]], budget: int
) -> list[dict[str, Any]]:
    """The ``candidates`` (best first) that fit in ``budget`` tokens beside the ``own`` entries,
    in name order (a stable list for clients that cache it)."""
    spent = sum(tokens(entry) for entry in own)
    chosen = []
    for entry in candidates:
        cost = tokens(entry)
        if spent + cost > budget:
            break
        spent += cost
        chosen.append(entry)
    return sorted(chosen, key=lambda entry: str(entry["name"]))
