"""data/natural/metatool_no_match: requests no tool serves, split as data/natural/README.md says.

A ``not_offered`` request takes its absent tool's split and that tool is never among the ten it
was offered with; every row has empty gold; no request appears twice.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

NATURAL = Path(__file__).resolve().parents[2] / "data" / "natural"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def test_metatool_no_match_rows_are_split_by_their_absent_tool() -> None:
    splits = {t["id"]: t["split"] for t in _lines(NATURAL / "metatool" / "tools.jsonl")}
    rows = _lines(NATURAL / "metatool_no_match" / "queries.jsonl")
    assert len(rows) >= 1500
    assert len({r["query"].lower() for r in rows}) == len(rows)
    assert all(r["gold"] == [] and r["split"] in ("train", "dev", "test") for r in rows)
    offered = [r for r in rows if r["group"] == "not_offered"]
    assert len(offered) >= 900 and {r["group"] for r in rows} == {"no_tool", "not_offered"}
    for r in offered:
        (absent,) = r["absent"]
        assert r["split"] == splits[absent]
        assert len(r["offered"]) == 10 and absent not in r["offered"]
        assert all(t in splits for t in r["offered"])


def test_metatool_no_match_is_documented_with_its_licence() -> None:
    folder = NATURAL / "metatool_no_match"
    assert "MIT" in (folder / "LICENSE").read_text(encoding="utf-8")
    source = (folder / "SOURCE.md").read_text(encoding="utf-8")
    assert "Task2-Subtask3.json" in source and "Task1.json" in source
