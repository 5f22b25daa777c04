"""Audit the livemcp paraphrase dev set against the catalog it points into.

Run from anywhere::

    python tests/data/livemcp_paraphrase/check.py [--catalog PATH] [--params] [--strict]

It fails (exit 1) when a line is malformed, an id repeats, a gold id is not in the catalog, a
query is outside 3-12 words or a ``group`` is unknown. It then prints, per query, the content
words (English Snowball stems, function words dropped) the query shares with the text of its
gold tools: name and description, and with ``--params`` also parameter names and descriptions.
Overlap is reported rather than fatal because a few words cannot be avoided (brand names such
as Airbnb); ``--strict`` makes any overlap fatal too.

The tokenizer is written out here on purpose instead of importing toolscout's analyzer: the
dev set must not be defined by the engine it is used to evaluate.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import Stemmer

HERE = Path(__file__).resolve().parent
DEFAULT_CATALOG = HERE.parents[3] / "shared" / "bench" / "livemcpbench" / "tools.jsonl"
GROUPS = frozenset({"paraphrase", "cross_lingual", "loose"})
MIN_WORDS, MAX_WORDS = 3, 12

# Function words only: every verb and noun counts as content, so "show me" vs "Shows ..." is
# reported as shared.
_FUNCTION_WORDS_TEXT = """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what whats when where
    which while who whom why will with would you your yours yourself yourselves s t d ll re ve
    m o y e g eg ie etc via per one
"""
FUNCTION_WORDS = frozenset(_FUNCTION_WORDS_TEXT.split())

_STEMMER = Stemmer.Stemmer("english")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")


def content_stems(text: str) -> set[str]:
    """Lower-cased Snowball stems of the non-function words in ``text`` (identifiers split)."""
    stems: set[str] = set()
    for run in _WORD.findall(text):
        for part in _CAMEL.split(run):
            word = part.lower()
            if len(word) > 1 and word not in FUNCTION_WORDS:
                stems.add(_STEMMER.stemWord(word))
    return stems


def tool_text(tool: dict[str, Any], *, with_params: bool) -> str:
    """The text a query must not echo: name and description, optionally the parameters."""
    parts = [str(tool.get("name") or ""), str(tool.get("description") or "")]
    if with_params:
        props = (tool.get("input_schema") or {}).get("properties") or {}
        for name, spec in props.items():
            parts.append(str(name))
            if isinstance(spec, dict):
                parts.append(str(spec.get("description") or ""))
    return " ".join(parts)


@dataclass(frozen=True)
class Query:
    id: str
    query: str
    gold: tuple[str, ...]
    group: str


def load_catalog(path: Path) -> dict[str, dict[str, Any]]:
    """Tool id -> tool record from a shared-bench ``tools.jsonl``."""
    tools: dict[str, dict[str, Any]] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                record = json.loads(line)
                tools[record["id"]] = record
    return tools


def load_queries(path: Path, catalog: dict[str, dict[str, Any]]) -> tuple[list[Query], list[str]]:
    """Parse queries.jsonl; returns the queries and every structural error found."""
    queries: list[Query] = []
    errors: list[str] = []
    seen: set[str] = set()
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path.name}:{lineno}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"{where}: invalid JSON ({exc.msg})")
            continue
        qid, text, gold, group = raw.get("id"), raw.get("query"), raw.get("gold"), raw.get("group")
        if not isinstance(qid, str) or not isinstance(text, str):
            errors.append(f"{where}: 'id' and 'query' must be strings")
            continue
        if qid in seen:
            errors.append(f"{where}: duplicate id {qid!r}")
        seen.add(qid)
        if group not in GROUPS:
            errors.append(f"{where}: group {group!r} is not one of {sorted(GROUPS)}")
        words = len(text.split())
        if not MIN_WORDS <= words <= MAX_WORDS:
            errors.append(f"{where}: {qid} has {words} words; keep {MIN_WORDS}-{MAX_WORDS}")
        if not isinstance(gold, list) or not gold or not all(isinstance(g, str) for g in gold):
            errors.append(f"{where}: 'gold' must be a non-empty list of tool ids")
            continue
        if len(set(gold)) != len(gold):
            errors.append(f"{where}: {qid} repeats a gold id")
        errors.extend(
            f"{where}: {qid} gold {g!r} is not in the catalog" for g in gold if g not in catalog
        )
        queries.append(Query(qid, text, tuple(gold), str(group)))
    return queries, errors


def overlaps(
    queries: list[Query], catalog: dict[str, dict[str, Any]], *, with_params: bool
) -> dict[str, dict[str, set[str]]]:
    """Per query id: gold tool id -> stems the query shares with that tool's text."""
    report: dict[str, dict[str, set[str]]] = {}
    for query in queries:
        stems = content_stems(query.query)
        shared = {
            gold: stems & content_stems(tool_text(catalog[gold], with_params=with_params))
            for gold in query.gold
            if gold in catalog
        }
        report[query.id] = {gold: words for gold, words in shared.items() if words}
    return report


def main(argv: list[str] | None = None) -> int:
    """Check the dev set and print the overlap audit; returns the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--catalog", type=Path, default=DEFAULT_CATALOG)
    parser.add_argument("--queries", type=Path, default=HERE / "queries.jsonl")
    parser.add_argument("--params", action="store_true", help="also compare parameter text")
    parser.add_argument("--strict", action="store_true", help="fail on any shared word")
    args = parser.parse_args(argv)
    if not args.catalog.is_file():
        print(f"catalog not found: {args.catalog} (pass --catalog)", file=sys.stderr)
        return 2
    catalog = load_catalog(args.catalog)
    queries, errors = load_queries(args.queries, catalog)
    for error in errors:
        print(f"ERROR {error}")
    report = overlaps(queries, catalog, with_params=args.params)
    by_query = {q.id: q for q in queries}
    for qid, shared in report.items():
        if shared:
            words = sorted(set().union(*shared.values()))
            print(f"{qid} [{by_query[qid].group}] {by_query[qid].query!r} shares {words}")
            for gold, stems in sorted(shared.items()):
                print(f"    {gold}: {sorted(stems)}")
    servers = {catalog[g]["server"] for q in queries for g in q.gold if g in catalog}
    first_servers = {catalog[q.gold[0]]["server"] for q in queries if q.gold[0] in catalog}
    clean = sum(1 for shared in report.values() if not shared)
    groups = Counter(q.group for q in queries)
    print(
        f"\n{len(queries)} queries, {sum(len(q.gold) for q in queries)} gold ids, "
        f"{len(servers)} servers in gold ({len(first_servers)} as first gold), "
        f"groups {dict(groups)}"
    )
    print(f"{clean} queries share no content word with their gold tools; {len(errors)} errors")
    failed = bool(errors) or (args.strict and clean != len(queries))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
