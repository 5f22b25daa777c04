"""Congruence: the same catalog indexed in SQLite (with its exact vector leg and FTS5, with its
Qdrant Edge HNSW leg forced on, and with its in-memory lexical posting index forced on), in
PostgreSQL and in PostgreSQL with a Qdrant vector leg (Qdrant Edge in process) gives the same
top-10 ids for every query, in every mode, fusion and hierarchical strategy.

The one allowed difference is a documented tie: the vector legs compute the same cosine in
float32 with different summation orders (numpy's BLAS vs pgvector's loop), so two tools whose
scores differ by less than ``TIE`` may swap places. Lexical scores are bit-identical (the
PostgreSQL store recomputes FTS5's bm25 operation by operation), so BM25 mode allows none.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.shared_bench import shared_set
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.models import SearchMode, SearchRequest, Strategy

pytestmark = pytest.mark.postgres
TIE = 1e-5
SAMPLE_TOOLS = 300
SAMPLE_QUERIES = 30


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """300 seal_tools tools (the gold of the sampled queries plus random others) and queries."""
    root = shared_set("seal_tools")
    tools = [json.loads(s) for s in (root / "tools.jsonl").read_text("utf-8").splitlines()]
    queries = [json.loads(s) for s in (root / "queries.jsonl").read_text("utf-8").splitlines()]
    rng = random.Random(7)
    picked = rng.sample([q for q in queries if q["gold"]], SAMPLE_QUERIES)
    wanted = {g for q in picked for g in q["gold"]}
    by_id = {t["id"]: t for t in tools}
    others = rng.sample(sorted(set(by_id) - wanted), SAMPLE_TOOLS - len(wanted))
    chosen = [by_id[i] for i in sorted(wanted | set(others))]
    path = tmp_path_factory.mktemp("congruence") / "tools.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in chosen), encoding="utf-8")
    return path, [q["query"] for q in picked]


@pytest.fixture(scope="module")
def engines(
    sample: tuple[Path, list[str]],
    tmp_path_factory: pytest.TempPathFactory,
    vector_cache: Path,
    postgres_url: str,
) -> Iterator[dict[str, Engine]]:
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(postgres_url)
    query = urlencode([*parse_qsl(parts.query), ("schema", "c_" + uuid.uuid4().hex[:12])])
    pg = urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))
    lite = str(tmp_path_factory.mktemp("congruence-db") / "index.db")
    ann = "sqlite:///" + str(tmp_path_factory.mktemp("congruence-ann") / "index.db")
    ann += "?ann_min_tools=0"
    lex = "sqlite:///" + str(tmp_path_factory.mktemp("congruence-lex") / "index.db")
    lex += "?lex_min_tools=0"
    qdrant_schema = urlencode([*parse_qsl(parts.query), ("schema", "q_" + uuid.uuid4().hex[:12])])
    folder = tmp_path_factory.mktemp("congruence-qdrant")
    qdrant = urlunsplit((parts.scheme, parts.netloc, parts.path, qdrant_schema, ""))
    qdrant += "&" + urlencode({"vectors": f"qdrant+local://{folder}/tools"})
    out: dict[str, Engine] = {}
    try:
        stores = (
            ("sqlite", lite),
            ("ann", ann),
            ("lex", lex),
            ("postgres", pg),
            ("qdrant", qdrant),
        )
        for name, db in stores:
            engine = Engine.open(Settings(db=db, cache_dir=str(vector_cache)))
            out[name] = engine
            engine.index([CatalogFile(sample[0], source="seal").read()])
        out["lex"].search(sample[1][0], mode="bm25")
        assert out["lex"].store.lex.describe()["leg"] == "postings"  # type: ignore[attr-defined]
        yield out
    finally:
        for engine in out.values():
            engine.close()


def assert_congruent(a: list[tuple[str, float]], b: list[tuple[str, float]], tie: float) -> None:
    """Same ids in the same order, except swaps among scores within ``tie`` of each other."""
    assert len(a) == len(b), (a, b)
    score_b = dict(b)
    for (id_a, s_a), (id_b, s_b) in zip(a, b, strict=True):
        if id_a == id_b:
            continue
        assert abs(s_a - s_b) <= tie, (a, b)
        # The displaced tool is tied in the other ranking, or was pushed past its end by a tie.
        other = score_b.get(id_a, b[-1][1])
        assert abs(other - s_a) <= tie, (a, b)


@pytest.mark.parametrize(
    ("mode", "fusion", "tie"),
    [
        ("bm25", "adaptive", 0.0),
        ("vector", "adaptive", TIE),
        ("hybrid", "adaptive", TIE),
        ("hybrid", "rrf", TIE),
        ("hybrid", "score", TIE),
    ],
)
def test_every_store_returns_the_same_top10(
    engines: dict[str, Engine],
    sample: tuple[Path, list[str]],
    mode: str,
    fusion: str,
    tie: float,
) -> None:
    for engine in engines.values():
        engine.searcher.config = type(engine.searcher.config)(fusion=fusion)  # type: ignore[arg-type]
        # The learned ranker (the default) runs over the adaptive fusion only.
        learned = "learned" if fusion == "adaptive" else fusion
        expected = learned if mode == "hybrid" else mode
        assert engine.searcher.ranking(SearchMode(mode))[0] == expected
    for query in sample[1]:
        runs = [
            [(h.tool.id, h.score) for h in e.search(query, mode=mode, limit=10).hits]
            for e in (engines["sqlite"], engines["postgres"], engines["qdrant"], engines["ann"])
        ]
        runs.append(
            [(h.tool.id, h.score) for h in engines["lex"].search(query, mode=mode, limit=10).hits]
        )
        assert runs[0], query
        for other in runs[1:]:
            assert_congruent(runs[0], other, tie)


@pytest.mark.parametrize("strategy", ["hierarchical", "direct", "hybrid"])
def test_every_store_agrees_on_hierarchical_search(
    engines: dict[str, Engine], sample: tuple[Path, list[str]], strategy: str
) -> None:
    for engine in engines.values():
        # The default configuration (the fusion test above leaves its last fusion behind).
        engine.searcher.config = type(engine.searcher.config)()
    counts = engines["sqlite"].store.skills.skill_tool_counts()
    assert counts == engines["postgres"].store.skills.skill_tool_counts()
    assert counts == engines["qdrant"].store.skills.skill_tool_counts()
    assert counts == engines["ann"].store.skills.skill_tool_counts()
    assert counts == engines["lex"].store.skills.skill_tool_counts()
    found = 0
    for query in sample[1]:
        request = SearchRequest(query, limit=10, strategy=Strategy(strategy))
        runs = [
            [(h.tool.id, h.score) for h in e.find(request).tools]
            for e in (engines["sqlite"], engines["postgres"], engines["qdrant"], engines["ann"])
        ]
        runs.append([(h.tool.id, h.score) for h in engines["lex"].find(request).tools])
        for other in runs[1:]:
            assert_congruent(runs[0], other, TIE)
        # The learned ranker (the default) re-scored every store's answer.
        assert {e.find(request).metadata["ranking"] for e in engines.values()} == {"learned"}
        found += len(runs[0])
    assert found >= len(sample[1]), "the strategy found almost nothing: the check would be empty"
