"""Calibrated scores, ``min_score`` and ``no_match`` through every door: Python, REST (body
and query string), MCP ``search_tools`` and the CLI, over the starter catalog and the real
model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from fastapi.testclient import TestClient
from mcp import Client
from typer.testing import CliRunner

from toolscout.api.mcp import create_mcp_server
from toolscout.cli import _register, app
from toolscout.engine import Engine
from toolscout.models import SearchRequest, Strategy

#: A request no tool of the starter catalog serves, flagged by the packaged calibration.
NONSENSE = "what is the meaning of life"
ANSWERABLE = "send an email to a colleague"
SEARCH = "/api/v1/search"


def test_nonsense_is_no_match_with_a_low_score_from_python(api_engine: Engine) -> None:
    result = api_engine.find(SearchRequest(NONSENSE, strategy=Strategy.DIRECT))
    assert result.no_match
    assert all(h.score < 0.5 for h in result.tools)
    assert result.metadata["calibration"] == "fitted"
    answer = api_engine.find(SearchRequest(ANSWERABLE, strategy=Strategy.DIRECT))
    assert not answer.no_match
    assert answer.tools[0].score > max((h.score for h in result.tools), default=0.0)


def test_min_score_drops_tools_below_it_and_an_empty_answer_is_no_match(
    api_engine: Engine,
) -> None:
    full = api_engine.find(SearchRequest(ANSWERABLE, strategy=Strategy.DIRECT, limit=10))
    cut = full.tools[2].score
    kept = api_engine.find(
        SearchRequest(ANSWERABLE, strategy=Strategy.DIRECT, limit=10, min_score=cut)
    )
    assert kept.tools and all(h.score >= cut for h in kept.tools)
    assert [h.tool.id for h in kept.tools] == [h.tool.id for h in full.tools if h.score >= cut]
    none = api_engine.find(SearchRequest(ANSWERABLE, strategy=Strategy.DIRECT, min_score=1.0))
    assert none.tools == [] and none.no_match


def test_rest_answers_no_match_in_the_body_and_honours_min_score(client: TestClient) -> None:
    body = client.post(SEARCH, json={"query": NONSENSE, "strategy": "direct"}).json()
    assert body["no_match"] is True
    assert body["metadata"]["calibration"] == "fitted"
    good = client.post(SEARCH, json={"query": ANSWERABLE}).json()
    assert good["no_match"] is False and good["tools"]
    top = good["tools"][0]["score"] - 1e-6  # scores are rounded to 6 places
    high = client.post(SEARCH, json={"query": ANSWERABLE, "min_score": top}).json()
    assert high["tools"] and all(t["score"] >= top for t in high["tools"])
    assert len(high["tools"]) < len(good["tools"])
    got = client.get(SEARCH, params={"query": ANSWERABLE, "min_score": 1.0}).json()
    assert got["tools"] == [] and got["no_match"] is True
    got = client.get(SEARCH, params={"query": NONSENSE}).json()
    assert got["no_match"] is True


def test_openapi_documents_no_match_and_the_calibration(client: TestClient) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    assert schemas["SearchResponse"]["properties"]["no_match"]["type"] == "boolean"
    assert "calibration" in schemas["SearchMetadata"]["properties"]
    assert "min_score" in schemas["SearchRequest"]["properties"]


def test_mcp_search_tools_says_no_match_and_honours_min_score(api_engine: Engine) -> None:
    async def main() -> tuple[Any, Any, Any]:
        async with Client(create_mcp_server(api_engine)) as client:
            out = []
            for args in (
                {"query": NONSENSE},
                {"query": ANSWERABLE},
                {"query": ANSWERABLE, "min_score": 1.0},
            ):
                result = await client.call_tool("search_tools", args)
                assert not result.is_error, result.content
                out.append(result.structured_content)
            return out[0], out[1], out[2]

    nonsense, good, strict = anyio.run(main)
    assert nonsense["no_match"] is True
    assert good["no_match"] is False and good["result"]
    assert strict["result"] == [] and strict["no_match"] is True


def test_cli_search_says_no_suitable_tool(served_db: Path) -> None:
    _register()
    cli = CliRunner()
    plain = cli.invoke(app, ["search", NONSENSE, "--db", str(served_db)], terminal_width=200)
    assert plain.exit_code == 0, plain.output
    assert "no suitable tool" in plain.stdout
    good = cli.invoke(app, ["search", ANSWERABLE, "--db", str(served_db)], terminal_width=200)
    assert "no suitable tool" not in good.stdout
    args = ["search", ANSWERABLE, "--db", str(served_db), "--min-score", "1", "--json"]
    strict = cli.invoke(app, args)
    assert '"no_match": true' in strict.stdout
