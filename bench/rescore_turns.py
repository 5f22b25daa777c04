"""The learned ranker's stage against the same stage at another git revision, timed in turns.

    python bench/rescore_turns.py --against REV [--runs 300] [--repeat 3] [--check N]

Re-scores 100 candidates as a search does (``bench/ranking.py``'s ``rescore_ms`` case: their
views from a dict built once, as the name table holds them; then their rows, the trees, the
probabilities, the order and the re-scored hits) with this checkout's ranker stage and with the
stage as it was at ``REV``: its modules (search/rank.py, rankrows.py, forest.py, rankcal.py,
rankinputs.py) and model files are read with ``git show`` into a package of their own and
imported beside the product's (the rest of toolscout is this checkout's). Both run in one
process, in turns (before, now, before, now ...), ``--runs`` times each, so that a machine
whose speed drifts slows both alike; each repeat prints both one's best and median and their
ratio (now over before). The two must give the same answers to the bit: checked first on the
timed request, and with ``--check N`` on N random ones (rows, outputs, probabilities and hits).
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

from toolscout.models import Scored
from toolscout.search import rank
from toolscout.search.candidates import Candidate, candidate, missing

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


WORDS = "send email file read write list search github issue create user calendar event get".split()


def random_case(rng: random.Random) -> tuple[Any, ...]:
    """One random request for both stages: legs with ties in their scores (or none), tools the
    candidates are not, no lexical run, no whole run, its own whole run or the vector leg's;
    candidates the fused head (or not), views of ids the store does not hold, shared servers,
    none and empty ones; up to five tokens."""
    pool = [f"tool{i}" for i in range(rng.choice([3, 30, 300]))]
    names = {t: " ".join(rng.sample(WORDS, rng.randint(0, 4))) for t in pool}
    servers = {t: rng.choice([None, "", "a", "b", "c"]) for t in pool}
    digits = rng.choice([2, 12])

    def run(most: int) -> list[Scored]:
        tools = rng.sample(pool, min(rng.randint(1, most), len(pool)))
        scores = sorted((round(rng.random(), digits) for _ in tools), reverse=True)
        return [Scored(t, s) for t, s in zip(tools, scores, strict=True)]

    vector, fused = run(150), run(160)
    lexical = run(120) if rng.random() < 0.9 else []
    whole = rng.choice([[], vector, run(150)])
    ids = [h.id for h in fused[: rng.choice([1, 2, 5, 50, 100, len(fused)])]]
    if rng.random() < 0.2:
        ids = rng.sample(pool, len(ids))
    seen = {
        t: missing(t) if rng.random() < 0.05 else candidate(t, names[t], servers[t]) for t in ids
    }
    intents = 1 if whole is vector else rng.randint(1, 4)
    legs = (lexical, vector, fused, intents, rng.choice([1, 50, 5000, 100000]), whole)
    return legs, ids, seen, rng.sample(WORDS, rng.randint(0, 5))


def same_answers(before: ModuleType, folder: Path, cases: int) -> int:
    """How many random requests (:func:`random_case`) both stages answer alike: the same rows,
    raw outputs and probabilities to the bit, the same re-scored hits (ids, scores, order) and
    probabilities by id, with the score map and with ``ranker.json``'s logistic map."""
    rng = random.Random(20261128)
    rankers = [(before.load_ranker(folder), rank.load_ranker())]
    rankers.append(tuple(replace(r, rankcal=None) for r in rankers[0]))
    for n in range(cases):
        legs, ids, seen, tokens = random_case(rng)
        old, new = before.Legs(*legs), rank.Legs(*legs)
        x = before.candidate_rows(old, ids, tokens, seen)
        if x.tobytes() != rank.candidate_rows(new, ids, tokens, seen).tobytes():
            raise SystemExit(f"random request {n}: the rows differ")
        for was, now in rankers:
            raw = was.scores(x, rank.REQUEST_COLUMNS)
            if raw.tobytes() != now.scores(x, rank.REQUEST_COLUMNS).tobytes():
                raise SystemExit(f"random request {n}: the trees' outputs differ")
            if was.probabilities(raw, x).tobytes() != now.probabilities(raw, x).tobytes():
                raise SystemExit(f"random request {n}: the probabilities differ")
            if before.rerank(was, old, ids, x) != rank.rerank(now, new, ids, x):
                raise SystemExit(f"random request {n}: the re-scored hits differ")
    return cases


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
    parser.add_argument(
        "--check",
        type=int,
        default=0,
        metavar="N",
        help="first compare answers on N random requests",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        before, folder = stage_at(args.against, Path(tmp))
        if args.check:
            print(json.dumps({"same_answers": same_answers(before, folder, args.check)}))
        for repeat in range(1, args.repeat + 1):
            print(json.dumps({"repeat": repeat, **turns(before, folder, args.runs)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
