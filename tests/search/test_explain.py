"""Engine.explain: the evidence behind each hit agrees with the engine's own ranking."""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources
from itertools import pairwise
from pathlib import Path

import pytest

from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.errors import QueryError
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.models import SearchMode, SearchRequest, Strategy

STARTER = Path(str(resources.files("toolscout.data").joinpath("starter_catalog.json")))


@pytest.fixture(scope="module")
def starter(tmp_path_factory: pytest.TempPathFactory, vector_cache: Path) -> Iterator[Engine]:
    path = tmp_path_factory.mktemp("explain") / "starter.db"
    engine = Engine.open(Settings(db=str(path), cache_dir=str(vector_cache)))
    engine.index([CatalogFile(STARTER, source="builtin").read()])
    yield engine
    engine.close()


def test_direct_hybrid_contributions_add_up_to_each_hits_score(starter: Engine) -> None:
    found = starter.explain("send an email to a colleague", strategy=Strategy.DIRECT, limit=8)
    plain = starter.search("send an email to a colleague", limit=8)
    assert [h.tool.id for h in found.hits] == [h.tool.id for h in plain.hits]
    assert found.lexical_weight + found.vector_weight == pytest.approx(1.0)
    assert [h.score for h in found.hits] == [h.score for h in plain.hits]
    for hit in found.hits:
        assert hit.note is None
        assert hit.lexical.contribution + hit.vector.contribution == pytest.approx(hit.fused)
    # The contributions reproduce the ranking: the fused scores fall down the list.
    fused = [h.fused for h in found.hits]
    assert all(a >= b - 0.005 for a, b in pairwise(fused))
    assert found.hits[0].lexical.rank == 1 or found.hits[0].vector.rank == 1


def test_matched_terms_list_query_words_found_in_each_field(starter: Engine) -> None:
    found = starter.explain("create issue", strategy=Strategy.DIRECT, mode=SearchMode.BM25, limit=3)
    top = found.hits[0]
    assert top.tool.id == "github::create_issue"
    assert set(top.matched_terms["name"]) == set(found.tokens) & {"creat", "issu"}
    assert all(t in found.tokens for terms in top.matched_terms.values() for t in terms)
    assert top.vector.weight == 0.0 and top.lexical.weight == 1.0


def test_hierarchical_hits_name_the_skills_that_routed_them(starter: Engine) -> None:
    found = starter.explain("send an email to a colleague", strategy=Strategy.HIERARCHICAL, limit=6)
    matched = {m.skill.id for m in found.matched_skills}
    assert "email" in matched
    top = found.hits[0]
    assert top.tool.id == "gmail::send_email" and top.routed_by == ("email",)
    assert top.schema is not None and "properties" in top.schema
    for hit in found.hits:
        if hit.routed_by:
            assert set(hit.routed_by) <= matched
        else:  # only the safety net lets a tool outside the matched skills in, scaled down
            assert hit.note is not None and "safety net" in hit.note


@pytest.mark.parametrize("strategy", ["direct", "hierarchical", "hybrid"])
def test_every_parameter_reaches_the_search_whatever_the_strategy(
    starter: Engine, strategy: str
) -> None:
    found = starter.explain(
        "create issue", strategy=strategy, mode=SearchMode.BM25, server="github"
    )
    plain = starter.find(
        SearchRequest(
            "create issue",
            strategy=Strategy(strategy),
            mode=SearchMode.BM25,
            limit=5,
            servers=("github",),
        )
    )
    assert found.mode is SearchMode.BM25
    assert found.hits and all(h.tool.server == "github" for h in found.hits)
    assert [h.tool.id for h in found.hits] == [h.tool.id for h in plain.tools]
    assert all(h.vector.weight == 0.0 for h in found.hits)


def test_an_unknown_strategy_is_named(starter: Engine) -> None:
    with pytest.raises(QueryError) as caught:
        starter.explain("weather", strategy="flat")
    assert caught.value.field == "strategy"
