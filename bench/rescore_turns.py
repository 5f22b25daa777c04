"""The learned ranker's stage against the same stage at another git revision, timed in turns.

    python bench/rescore_turns.py --against REV [--runs 300] [--repeat 3]

Re-scores 100 candidates as a search does (``bench/ranking.py``'s ``rescore_ms`` case: their
views from a dict built once, as the name table holds them; then their rows, the trees, the
probabilities, the order and the re-scored hits) with this checkout's ranker stage and with the
stage as it was at ``REV``: its modules (search/rank.py, rankrows.py, forest.py, rankcal.py,
rankinputs.py) and model files are read with ``git show`` into a package of their own and
imported beside the product's (the rest of toolscout is this checkout's). Both run in one
process, in turns (before, now, before, now ...), ``--runs`` times each, so that a machine
whose speed drifts slows both alike; each repeat prints both one's best and median and their
ratio (now over before). The two must give the same answers to the bit, checked first.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from toolscout.models import Scored
from toolscout.search import rank
from toolscout.search.candidates import Candidate, candidate

ROOT = Path(__file__).resolve().parents[1]
SEARCH = "src/toolscout/search"
MODULES = ("rank", "rankrows", "forest", "rankcal", "rankinputs")
FILES = ("ranker.txt", "ranker.json", "rankcal.json")
PACKAGE = "stage_before"
#: An import of one of the stage's modules, to be read from the package instead.
STAGE_IMPORT = re.compile(rf"toolscout\.search\.({'|'.join(MODULES)})\b")


def stage_at(rev: str, into: Path) -> tuple[ModuleType, Path]:
    """The ranker stage's modules at ``rev`` as package :data:`PACKAGE` under ``into``
    (imported), and the folder of its model files."""
    folder = into / PACKAGE
    folder.mkdir()
    (folder / "__init__.py").write_text("", encoding="utf-8")
    for name in (*MODULES, *FILES):
        path = f"{name}.py" if name in MODULES else name
        shown = subprocess.run(
            ["git", "show", f"{rev}:{SEARCH}/{path}"], cwd=ROOT, capture_output=True, check=True
        ).stdout
        if name in MODULES:
            shown = STAGE_IMPORT.sub(rf"{PACKAGE}.\1", shown.decode("utf-8")).encode("utf-8")
        (folder / path).write_bytes(shown)
    sys.path.insert(0, str(into))
    return importlib.import_module(f"{PACKAGE}.rank"), folder


def case() -> tuple[list[Scored], list[str], dict[str, Candidate]]:
    """``rescore_ms``'s request: 100 fused candidates, half of them found by the lexical leg."""
    hits = [Scored(f"t{i}", 0.8 - i / 200) for i in range(100)]
    ids = [h.id for h in hits]
    return hits, ids, {tid: candidate(tid, f"tool {tid}", None) for tid in ids}


def turns(before: ModuleType, folder: Path, runs: int) -> dict[str, Any]:
    """Best and median ms of both stages, timed in turns, and their ratios."""
    hits, ids, seen = case()
    stages = {
        name: (module, module.load_ranker(at), module.Legs(hits[:50], hits, hits, 1, 5000, hits))
        for name, module, at in (("before", before, folder), ("now", rank, None))
    }

    def once(name: str) -> Any:
        module, ranker, legs = stages[name]
        return module.rerank(ranker, legs, ids, module.candidate_rows(legs, ids, ["tool"], seen))

    if once("before") != once("now"):
        raise SystemExit("the stage at the revision and this checkout's answer differently")
    took: dict[str, list[float]] = {"before": [], "now": []}
    for _ in range(runs):
        for name in took:
            t0 = time.perf_counter()
            once(name)
            took[name].append((time.perf_counter() - t0) * 1000)
    out: dict[str, Any] = {}
    for name, values in took.items():
        values.sort()
        out[name] = {"best": round(values[0], 3), "median": round(values[len(values) // 2], 3)}
    for figure in ("best", "median"):
        out[f"ratio_{figure}"] = round(out["now"][figure] / out["before"][figure], 3)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", required=True, help="the git revision to time against")
    parser.add_argument("--runs", type=int, default=300, help="re-scores per stage and repeat")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        before, folder = stage_at(args.against, Path(tmp))
        for repeat in range(1, args.repeat + 1):
            print(json.dumps({"repeat": repeat, **turns(before, folder, args.runs)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
