"""The dev sets ``bench/ranking.py --splits dev`` reports, as dataset folders the product's eval
runner reads (``toolscout.eval.run``): each set's catalog and its dev requests, at most ``cap``
of them taken at an even stride in file order (the selection bench/natural.py's
``load_requests`` makes, so the same cap picks the same requests there and here).

* ``livemcp_paraphrase``: the paraphrase requests whose ids
  ``data/natural/livemcp_paraphrase_split.json`` puts in ``dev``, over the LiveMCPBench catalog;
* ``seal_tools``: Seal-Tools' ``dev`` split over its whole catalog;
* ``metatool``, ``gorilla_apibench``, ``bfcl``: ``data/natural``'s ``dev`` split (split by
  tool) over the source's whole catalog;
* ``tooleyes_dev``: every request (gold at toolkit level).

Sets from the shared data take their folder from ``shared`` (the ``shared_bench`` fixture:
:func:`support.shared_bench.shared_set`, which skips outside CI when the data is absent and fails
in CI).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
NATURAL = ROOT / "data" / "natural"
PARAPHRASES = ROOT / "tests" / "data" / "livemcp_paraphrase" / "queries.jsonl"

Row = dict[str, Any]


@dataclass(frozen=True)
class DevSet:
    """A dataset folder (``queries.jsonl`` of the dev requests) and the catalog to index."""

    folder: Path
    catalog: Path
    requests: int


def _split_is_dev(row: Row) -> bool:
    return row.get("split") == "dev"


def _paraphrase_dev() -> Callable[[Row], bool]:
    split = json.loads((NATURAL / "livemcp_paraphrase_split.json").read_text(encoding="utf-8"))
    dev = set(split["dev"])
    return lambda row: row["id"] in dev


def _source(name: str, shared: Callable[[str], Path]) -> tuple[Path, Path, Callable[[Row], bool]]:
    """The set's catalog, its requests file and which of its rows are dev."""
    if name == "livemcp_paraphrase":
        return shared("livemcpbench") / "tools.jsonl", PARAPHRASES, _paraphrase_dev()
    if name in ("seal_tools", "tooleyes_dev"):
        root = shared(name)
        rule = _split_is_dev if name == "seal_tools" else (lambda row: True)
        return root / "tools.jsonl", root / "queries.jsonl", rule
    if name in ("metatool", "gorilla_apibench", "bfcl"):
        return NATURAL / name / "tools.jsonl", NATURAL / name / "queries.jsonl", _split_is_dev
    raise ValueError(f"no dev set named {name!r}")


def dev_set(name: str, folder: Path, cap: int, shared: Callable[[str], Path]) -> DevSet:
    """Write the set's dev requests (at most ``cap``, an even stride) to
    ``folder/queries.jsonl``; answerable requests only.

    Raises: ValueError for a name that is no dev set."""
    catalog, queries, is_dev = _source(name, shared)
    rows = [json.loads(line) for line in queries.read_text(encoding="utf-8").splitlines() if line]
    dev = [r for r in rows if r.get("gold") and is_dev(r)]
    step = max(1, -(-len(dev) // cap))
    picked = dev[::step]
    folder.mkdir(parents=True, exist_ok=True)
    lines = (json.dumps({"id": r["id"], "query": r["query"], "gold": r["gold"]}) for r in picked)
    (folder / "queries.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return DevSet(folder, catalog, len(picked))
