"""Which tool text should the vector leg embed? Cosine only, side by side, one run.

    python bench/natural_text.py [--sets livemcp_paraphrase metatool bfcl] [--max-queries 400]

Text variants (the query side is the same for all: the request's intents, best cosine):

* ``current`` — what toolscout indexes (search/document.py ``embed_text``): readable name and
  server, description, the offline enrichment's action pairs, server context sentence and
  example values, parameter names;
* ``no_enrichment`` — the same without enrichment;
* ``clean`` — readable name, description, parameter names (no server, no enrichment);
* ``clean_identifier`` — ``clean`` led by the raw identifier (``AclApi.add_mapping (acl api
  add mapping): ...``);
* ``current_identifier`` — ``current``, but a tool with no server is led by its raw identifier
  as well (``math.factorial (math factorial): ...``), as ``plain`` is;
* ``plain`` — the newcomer's ``name + split name + description + parameter names``.

Each variant is also compared with ``current`` request by request: on how many requests one
ranks a gold tool in the top 3 and the other does not, with the exact sign test's p-value.
``hit@3 any copy`` counts a numbered copy of a gold tool (BFCL's ``Name#5`` rewordings) as right.
Tool vectors come from the embedding cache when bench/natural.py or an earlier run made them.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from natural import ROOT, datasets, db_folder, load_requests, open_index, plain_text
from toolscout.embed.base import DEFAULT_MODEL
from toolscout.eval.metrics import mean, score_query
from toolscout.models import Tool
from toolscout.search.document import embed_text, readable_name

Fields = Mapping[str, str] | None


def _clean(tool: Tool, head: str | None = None) -> str:
    params = [readable_name(p) for p in tool.parameter_names()[:12]]
    tail = f" Parameters: {', '.join(params)}." if params else ""
    return f"{head or readable_name(tool.name)}: {tool.description.strip()}{tail}"[:1000]


def _clean_identifier(tool: Tool) -> str:
    readable = readable_name(tool.name)
    same = readable.replace(" ", "") == tool.name.lower()
    return _clean(tool, tool.name if same else f"{tool.name} ({readable})")


def _current_identifier(tool: Tool, extra: Fields) -> str:
    text = embed_text(tool, extra)
    readable = readable_name(tool.name)
    if tool.server or readable.replace(" ", "") == tool.name.lower():
        return text
    return f"{tool.name} ({text.replace(':', '):', 1)}"[:1000]


VARIANTS: dict[str, Callable[[Tool, Fields], str]] = {
    "current": lambda t, extra: embed_text(t, extra),
    "current_identifier": _current_identifier,
    "no_enrichment": lambda t, extra: embed_text(t, None),
    "clean": lambda t, extra: _clean(t),
    "clean_identifier": lambda t, extra: _clean_identifier(t),
    "plain": lambda t, extra: plain_text(t),
}


def base_id(tool_id: str) -> str:
    """A tool's id without a copy number: BFCL holds numbered rewordings of one function
    (``bfcl::Services_4_FindProvider#5``)."""
    return tool_id.split("#", 1)[0]


def paired(mine: list[float], theirs: list[float]) -> tuple[int, int, float]:
    """Requests one text ranks right in the top 3 and the other does not, both ways, and the
    exact two-sided sign test's p-value of that split (1.0: no difference)."""
    won = sum(1 for a, b in zip(mine, theirs, strict=True) if a > b)
    lost = sum(1 for a, b in zip(mine, theirs, strict=True) if a < b)
    n, k = won + lost, min(won, lost)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n if n else 0.5
    return won, lost, min(1.0, 2 * tail)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+", default=["livemcp_paraphrase", "metatool", "bfcl"])
    parser.add_argument("--natural", type=Path, default=ROOT / "data" / "natural")
    parser.add_argument("--max-queries", type=int, default=400)
    parser.add_argument("--db-dir", type=Path, default=None, help="default: bench/out/natural/db")
    parser.add_argument("--splits", nargs="+", default=["dev"])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    args = parser.parse_args()
    all_sets = datasets(args.natural)
    db_dir = args.db_dir or db_folder(ROOT / "bench" / "out" / "natural" / "db", DEFAULT_MODEL)
    report: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for name in args.sets:
        ds = all_sets[name]
        reqs = [r for r in load_requests(ds, args.max_queries) if r.split in args.splits]
        engine, tools = open_index(db_dir / f"{name}.db", ds.tools, name)
        extra, _ = engine.enrichment_fields({t.id: t for t in tools}, set())
        ids = [t.id for t in tools]
        queries = [engine.searcher.embed_query(r.text) for r in reqs]
        report[name] = {}
        hits: dict[tuple[str, str], list[float]] = {}
        copies: dict[tuple[str, str], list[float]] = {}
        gold_copies = {r.id: {base_id(g) for g in r.gold} for r in reqs}
        for variant in args.variants:
            text_of = VARIANTS[variant]
            matrix = engine.embedder.embed([text_of(t, extra.get(t.id)) for t in tools])
            for split in args.splits:
                rows: list[dict[str, float]] = []
                copy_hits: list[float] = []
                for r, q in zip(reqs, queries, strict=True):
                    if r.split != split:
                        continue
                    sims = (q @ matrix.T).max(axis=0)
                    ranked = [ids[i] for i in np.argsort(-sims, kind="stable")[:10]]
                    rows.append(score_query(ranked, r.gold))
                    top3 = {base_id(t) for t in ranked[:3]}
                    copy_hits.append(float(bool(top3 & gold_copies[r.id])))
                m = mean(rows)
                report[name].setdefault(split, {})[variant] = {
                    "hit@3": m["hit@3"],
                    "ndcg@10": m["ndcg@10"],
                    "hit@3_any_copy": float(np.mean(copy_hits)),
                }
                hits[(split, variant)] = [row["hit@3"] for row in rows]
                copies[(split, variant)] = copy_hits
                print(
                    f"{name:18s} {split:4s} n={len(rows):4d} {variant:17s} "
                    f"hit@3 {100 * m['hit@3']:5.1f}  nDCG@10 {100 * m['ndcg@10']:5.1f}  "
                    f"hit@3 any copy {100 * float(np.mean(copy_hits)):5.1f}",
                    flush=True,
                )
        for (split, variant), mine in hits.items():
            if variant == "current" or (split, "current") not in hits:
                continue
            theirs = hits[(split, "current")]
            won, lost, p = paired(mine, theirs)
            # Of those requests: how many the losing text still served with a copy of the gold.
            near = sum(
                (a > b and c_theirs > 0) or (a < b and c_mine > 0)
                for a, b, c_mine, c_theirs in zip(
                    mine, theirs, copies[(split, variant)], copies[(split, "current")], strict=True
                )
            )
            report[name][split][variant].update(
                {"won": won, "lost": lost, "sign_test_p": p, "loser_had_a_copy": near}
            )
            print(f"{name:18s} {split:4s} {variant:17s} against current: hit@3 on {won} "
                  f"requests it misses, misses {lost} it hits (the loser ranks a copy of the "
                  f"gold in {near}); sign test p = {p:.2f}")  # fmt: skip
        engine.close()
    out = ROOT / "bench" / "out" / "natural"
    out.mkdir(parents=True, exist_ok=True)
    (out / "natural_text.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
