"""A corpus of malformed catalogs: every one is read without an exception other than IngestError,
the damage is reported where it is, and nothing already indexed is lost when a catalog that was
indexed whole comes back damaged."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from support.fault_integrity import check
from support.fault_setup import SEED, Scene, WriterPool
from toolscout.errors import IngestError
from toolscout.ingest.jsonfile import load_catalog

GOOD = {"name": "get_weather", "description": "Weather for a city.", "inputSchema": {}}
DEEP = "[" * 50_000 + "]" * 50_000
NESTED: dict[str, object] = {"type": "object"}
_inner = NESTED
for _ in range(200):
    _inner["properties"] = {"x": {"type": "object"}}
    _inner = _inner["properties"]["x"]  # type: ignore[index]

#: name -> (file suffix, bytes). Each is damaged in one way real files are.
CORPUS: dict[str, tuple[str, bytes]] = {
    "empty": (".json", b""),
    "whitespace": (".jsonl", b"  \n\n\t\n"),
    "truncated_json": (".json", json.dumps({"tools": [GOOD] * 5}).encode()[:-9]),
    "truncated_jsonl_line": (".jsonl", (json.dumps(GOOD) + "\n" + json.dumps(GOOD)[:-4]).encode()),
    "top_level_number": (".json", b"42"),
    "top_level_string": (".json", b'"tools"'),
    "top_level_null": (".json", b"null"),
    "non_object_lines": (".jsonl", b'"a"\n1\n[1, 2]\nnull\ntrue\n'),
    "deep_array_json": (".json", DEEP.encode()),
    "deep_array_jsonl": (".jsonl", DEEP.encode()),
    "deep_schema": (".json", json.dumps([{**GOOD, "inputSchema": NESTED}]).encode()),
    "huge_description": (".json", json.dumps([{**GOOD, "description": "d" * 2_000_000}]).encode()),
    "huge_name": (".json", json.dumps([{**GOOD, "name": "n" * 100_000}]).encode()),
    "huge_schema": (
        ".json",
        json.dumps(
            [{**GOOD, "inputSchema": {"properties": {f"p{i}": {} for i in range(200_000)}}}]
        ).encode(),
    ),
    "latin1": (".json", b'[{"name": "caf\xe9"}]'),
    "latin1_line": (".jsonl", json.dumps(GOOD).encode() + b'\n{"name": "caf\xe9"}\n'),
    "nan": (".json", b'[{"name": "n", "inputSchema": {"default": NaN}}]'),
    "infinity": (".jsonl", b'{"name": "i", "inputSchema": {"maximum": Infinity}}'),
    "overflow": (".json", b'[{"name": "o", "inputSchema": {"maximum": 1e99999}}]'),
    "duplicate_ids": (".json", json.dumps([{**GOOD, "id": "x"}, {**GOOD, "id": "x"}]).encode()),
    "ref_cycle": (
        ".json",
        json.dumps(
            [{**GOOD, "inputSchema": {"$ref": "#", "properties": {"a": {"$ref": "#"}}}}]
        ).encode(),
    ),
    "wrong_types": (
        ".json",
        json.dumps(
            [
                {"name": 3},
                {"name": "a", "inputSchema": []},
                {"name": "b", "inputSchema": {"type": "string"}},
                {"name": "c", "inputSchema": {"properties": []}},
                {"name": "d", "annotations": "x"},
                {"name": "e", "server": 5},
                {"name": "f", "item_type": "robot"},
                {"name": ""},
            ]
        ).encode(),
    ),
    "nul_bytes": (".jsonl", b'{"name": "a\x00b"}\n\x00\x00\x00\n'),
    "bom_then_garbage": (".json", b"\xef\xbb\xbf\xff\xfe{"),
    "lone_surrogate": (".json", b'[{"name": "\\ud800"}]'),
    "mcp_tools_not_a_list": (".json", b'{"tools": {"name": "x"}}'),
    "jsonrpc_error": (".json", b'{"jsonrpc": "2.0", "error": {"code": -1}}'),
}


def _read(path: Path) -> tuple[int, int]:
    """(tools, problems) or (-1, -1) for a file refused whole with IngestError."""
    try:
        loaded = load_catalog(path)
    except IngestError as exc:
        assert str(path) in str(exc)
        return -1, -1
    return len(loaded.tools), len(loaded.problems)


def _mutations(seed: int, count: int) -> list[tuple[str, bytes]]:
    """Seeded damage to a valid catalog: cuts, flipped bytes, inserted brackets and quotes."""
    rng = random.Random(seed)
    valid = (
        "\n".join(
            json.dumps({**GOOD, "id": f"t{i}", "inputSchema": {"type": "object"}})
            for i in range(20)
        )
        + "\n"
    ).encode()
    damage: list[Callable[[bytearray], None]] = [
        lambda b: b.__delitem__(slice(rng.randrange(len(b)), None)),
        lambda b: b.__setitem__(rng.randrange(len(b)), rng.randrange(256)),
        lambda b: b.insert(rng.randrange(len(b)), rng.choice(b'[]{}",:\\\n')),
        lambda b: b.__delitem__(rng.randrange(len(b))),
    ]
    out = []
    for i in range(count):
        data = bytearray(valid)
        for _ in range(rng.randint(1, 6)):
            if len(data) > 1:
                rng.choice(damage)(data)
        out.append((".jsonl" if i % 2 else ".json", bytes(data)))
    return out


def test_every_malformed_catalog_is_read_or_refused_with_a_clear_error(tmp_path: Path) -> None:
    tried = 0
    for name, (suffix, data) in CORPUS.items():
        path = tmp_path / f"{name}{suffix}"
        path.write_bytes(data)
        tools, problems = _read(path)
        tried += 1
        assert tools <= 1 or name == "duplicate_ids", name
        if name in ("non_object_lines", "latin1_line", "truncated_jsonl_line", "nul_bytes"):
            assert problems >= 1, name  # the damage is reported line by line...
        if name in ("latin1_line", "truncated_jsonl_line"):
            assert tools == 1, name  # ...and the good line loads
    for i, (suffix, data) in enumerate(_mutations(SEED, 400)):
        path = tmp_path / f"mutation{i}{suffix}"
        path.write_bytes(data)
        _read(path)
        tried += 1
    assert tried == len(CORPUS) + 400
    print(f"malformed catalogs: {tried} tried ({len(CORPUS)} named, 400 seeded mutations)")


@pytest.mark.parametrize("op", ["index", "sync"])
def test_a_damaged_catalog_keeps_every_tool_it_had(
    writer_pool: WriterPool, scene: Scene, tmp_path: Path, op: str
) -> None:
    db = scene.copy(tmp_path / "damaged.db")
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    catalogs = []
    lines_damaged = 0
    for part in scene.catalogs:
        lines = part.read_text(encoding="utf-8").splitlines()
        # Version 2's lines with every 7th damaged as an editor or a half-written save leaves it.
        for k in range(0, len(lines), 7):
            lines[k] = lines[k][: len(lines[k]) // 2]
            lines_damaged += 1
        path = damaged / part.name
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        catalogs.append(path)
    # The index knows the damaged files under the names the clean ones had (same sources).
    for clean, dirty in zip(scene.catalogs, catalogs, strict=True):
        clean_copy = tmp_path / "clean" / clean.name
        clean_copy.parent.mkdir(exist_ok=True)
        clean_copy.write_bytes(clean.read_bytes())
        clean.write_bytes(dirty.read_bytes())
    try:
        request = {"op": op, "db": str(db), "catalogs": [str(c) for c in scene.catalogs]}
        (run,) = writer_pool.run({**request, "prune": True})
    finally:
        for clean in scene.catalogs:
            clean.write_bytes((tmp_path / "clean" / clean.name).read_bytes())
    after = check(db)
    assert not run["killed"] and run["exit"] == 0
    # Nothing of version 1 is lost: the unreadable lines' tools keep their indexed version.
    assert set(scene.v1) <= set(after.tools)
    report = run["report"]
    problems = report["skipped"] if op == "index" else report["totals"]["failed"]
    if op == "index":
        assert sum("invalid JSON" in p for p in problems) == lines_damaged
        assert any("kept" in p and "could not be read" in p for p in problems)
    else:
        assert problems >= lines_damaged
