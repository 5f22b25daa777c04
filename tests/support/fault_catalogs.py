"""Generated catalogs for the fault suite: a first version, and a second that adds, changes and
drops tools, so one write run inserts, updates and deletes across several embedding chunks."""

from __future__ import annotations

import json
import random
from pathlib import Path

from toolscout.ingest.jsonfile import CatalogFile

VERBS = ["create", "list", "get", "update", "delete", "search", "send", "archive", "export"]
NOUNS = [
    "issue", "message", "invoice", "calendar_event", "file", "contact", "ticket", "order",
    "forecast", "pull_request", "payment", "playlist", "note", "task", "dashboard", "alert",
]  # fmt: skip
SERVERS = ["github", "slack", "stripe", "gcal", "drive", "crm", "jira", "shop", "weather",
           "music", "notes", "monitor"]  # fmt: skip
FILES = 3


def _tool(server: str, verb: str, noun: str, variant: int, revision: int) -> dict[str, object]:
    words = noun.replace("_", " ")
    described = f"{verb.capitalize()} a {words} in {server}"
    if revision:
        described += f" (revision {revision}: also returns the {words}'s history)"
    return {
        "id": f"{server}::{verb}_{noun}_{variant}",
        "name": f"{verb}_{noun}_{variant}",
        "server": server,
        "description": described + ".",
        "input_schema": {
            "type": "object",
            "properties": {f"{noun}_id": {"type": "string"}, "limit": {"type": "integer"}},
        },
    }


def versions(seed: int, size: int) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """(v1, v2): v2 drops a tenth of v1, changes a fifth and adds a quarter as many new."""
    rng = random.Random(seed)
    combos = [(s, v, n) for s in SERVERS for v in VERBS for n in NOUNS]
    rng.shuffle(combos)
    first = [_tool(s, v, n, i % 3, 0) for i, (s, v, n) in enumerate(combos[:size])]
    kept = rng.sample(range(size), size - size // 10)
    changed = set(rng.sample(kept, size // 5))
    second = []
    for i in sorted(kept):
        s, v, n = combos[i]
        second.append(_tool(s, v, n, i % 3, 1 if i in changed else 0))
    for i, (s, v, n) in enumerate(combos[size : size + size // 4], start=size):
        second.append(_tool(s, v, n, i % 3, 0))
    return first, second


def write(folder: Path, tools: list[dict[str, object]]) -> list[Path]:
    """Split ``tools`` into FILES JSONL files by server (each file is one source)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"part{k}.jsonl" for k in range(FILES)]
    lines: list[list[str]] = [[] for _ in paths]
    for tool in tools:
        lines[SERVERS.index(str(tool["server"])) % FILES].append(json.dumps(tool))
    for path, rows in zip(paths, lines, strict=True):
        path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return paths


def content_hashes(paths: list[Path]) -> dict[str, str]:
    """id -> content hash, as the index records them."""
    out: dict[str, str] = {}
    for path in paths:
        out.update((t.id, t.content_hash) for t in CatalogFile(path).read().tools)
    return out
