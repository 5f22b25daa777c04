"""MetaTool's requests that no offered tool serves, in the shared JSONL format (gold empty).

    python data/natural/build.py ...   (calls :func:`metatool_no_match`)

Two kinds, both from the MetaTool repository (MIT):

* ``no_tool``: Task 1's requests labelled as needing no tool at all (open questions, writing,
  code to write). Split by a hash of the request's id, in the shares the tools are split by.
* ``not_offered``: Task 2 subtask 3, a request whose tool is left out of the ten tools offered
  with it. ``absent`` names that tool (``metatool::<name>``, a tool of ``../metatool``),
  ``offered`` the ten tools; the request takes its absent tool's split, as in ``../metatool``
  (where the same request is a training, dev or test request with that tool as gold).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from build import HERE, clean, git_show, tool_split, write_jsonl

OFFERED = re.compile(r"tool name: ([^,]+), tool description:")


def metatool_no_match(gitdir: Path) -> None:
    tools = [
        json.loads(x)
        for x in (HERE / "metatool" / "tools.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    splits = {t["id"]: t["split"] for t in tools}
    rows: list[dict[str, Any]] = []
    task1 = json.loads(git_show(gitdir, "dataset/tmp_dataset/Task1.json"))
    for i, item in enumerate(r for r in task1 if r["label"] == "negative"):
        rid = f"mtn{i:04d}"
        rows.append({"id": rid, "query": clean(item["query"]), "gold": [], "group": "no_tool",
                     "split": tool_split("metatool_no_tool", rid)})  # fmt: skip
    task2 = json.loads(git_show(gitdir, "dataset/tmp_dataset/Task2-Subtask3.json"))
    for i, item in enumerate(task2):
        absent = f"metatool::{item['tool']}"
        offered = [f"metatool::{name.strip()}" for name in OFFERED.findall(item["action_prompt"])]
        if absent not in splits or absent in offered or not all(o in splits for o in offered):
            continue
        rows.append({"id": f"mto{i:04d}", "query": clean(item["query"]), "gold": [],
                     "group": "not_offered", "absent": [absent], "offered": offered,
                     "split": splits[absent]})  # fmt: skip
    seen: set[str] = set()
    kept = []
    for row in rows:
        key = row["query"].lower()
        if key and key not in seen:
            seen.add(key)
            kept.append(row)
    n = write_jsonl(HERE / "metatool_no_match" / "queries.jsonl", kept)
    counts = {
        (g, s): sum(1 for r in kept if r["group"] == g and r["split"] == s)
        for g in ("no_tool", "not_offered")
        for s in ("train", "dev", "test")
    }
    print(f"metatool_no_match: {n} requests {counts}")
