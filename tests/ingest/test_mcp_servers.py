"""MCP servers as sources: real servers over stdio and streamable HTTP, spoken to with the SDK."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from support.mcp_test_servers import CRASH_SCRIPT, HANG_SCRIPT, Catalog, script_spec, tool
from toolscout.engine import Engine
from toolscout.errors import IngestError
from toolscout.ingest.mcp import McpSource
from toolscout.ingest.mcpconfig import ServerSpec, read_mcp_config
from toolscout.models import ItemType
from toolscout.sync.sync import sync

FIVE_TOOLS = [
    tool("read_file", "Read a text file from disk", path="file to read"),
    tool("write_file", "Write text to a file", path="file to write", text="content"),
    tool("list_dir", "List the entries of a directory", path="directory"),
    tool("move_file", "Move or rename a file", src="from", dst="to"),
    tool("delete_file", "Delete a file permanently", path="file to delete"),
]


def test_stdio_server_lists_every_page_of_tools_prompts_and_resources(
    catalog: Catalog, stdio_spec: Callable[..., ServerSpec]
) -> None:
    catalog.write(
        FIVE_TOOLS,
        prompts=[
            {"name": "review", "description": "Review a diff", "arguments": [{"name": "diff"}]}
        ],
        resources=[{"name": "readme", "uri": "file:///README.md", "description": "Project readme"}],
    )
    loaded = McpSource(stdio_spec("files")).read()
    assert loaded.source == "mcp:files"
    assert loaded.problems == []
    by_id = {t.id: t for t in loaded.tools}
    # Five tools over three pages of two: every cursor was followed.
    assert sorted(i for i in by_id if by_id[i].item_type is ItemType.TOOL) == sorted(
        f"files::{t['name']}" for t in FIVE_TOOLS
    )
    prompt = by_id["files::prompt:review"]
    assert prompt.item_type is ItemType.PROMPT
    assert prompt.parameter_names() == ["diff"]
    resource = by_id["files::resource:file:///README.md"]
    assert resource.item_type is ItemType.RESOURCE
    assert resource.annotations["uri"] == "file:///README.md"
    assert all(t.server == "files" and t.source == "mcp:files" for t in loaded.tools)


def test_http_server_changes_reach_the_index_between_syncs(
    engine: Engine, catalog: Catalog, http_url: str
) -> None:
    source = McpSource(ServerSpec(name="web", transport="http", url=http_url, timeout=20))
    catalog.write(FIVE_TOOLS[:3])
    first = sync(engine, [source]).sources[0]
    assert (first.added, first.error) == (3, None)

    changed = dict(FIVE_TOOLS[0], description="Fetch the bytes of a remote object storage blob")
    catalog.write([changed, FIVE_TOOLS[1], FIVE_TOOLS[4]])
    second = sync(engine, [source]).sources[0]
    assert (second.added, second.deleted, second.error) == (1, 1, None)
    # read_file changed; write_file may be re-embedded too when enrichment derives text from the
    # whole server, so only the sum is fixed.
    assert second.updated >= 1 and second.updated + second.unchanged == 2

    assert engine.get_tool("web::read_file").description.startswith("Fetch the bytes")
    hits = engine.search("remote object storage blob", limit=3).hits
    assert hits[0].tool.id == "web::read_file"
    assert "web::list_dir" not in {h.tool.id for h in engine.search("list directory").hits}


def test_a_crashing_server_is_reported_with_its_stderr(tmp_path: Path) -> None:
    spec = script_spec(tmp_path, "crashy", CRASH_SCRIPT, timeout=20)
    with pytest.raises(IngestError) as caught:
        McpSource(spec).read()
    message = str(caught.value)
    assert "'crashy'" in message
    assert "TOKEN is not set" in message


def test_a_hanging_server_times_out_with_its_name(tmp_path: Path) -> None:
    spec = script_spec(tmp_path, "sleepy", HANG_SCRIPT, timeout=1.0)
    with pytest.raises(IngestError, match=r"'sleepy'.*within 1 s"):
        McpSource(spec).read()


def test_a_server_that_will_not_start_is_reported(tmp_path: Path) -> None:
    spec = ServerSpec(name="ghost", transport="stdio", command=str(tmp_path / "no-such-binary"))
    with pytest.raises(IngestError, match="'ghost'"):
        McpSource(spec).read()


def test_failed_server_keeps_its_tools_and_others_still_sync(
    engine: Engine, tmp_path: Path, catalog: Catalog, stdio_spec: Callable[..., ServerSpec]
) -> None:
    catalog.write(FIVE_TOOLS[:2])
    good = McpSource(stdio_spec("files"))
    sync(engine, [good])
    # Same server name, now crashing: its listing failed, which is not an empty listing.
    broken = McpSource(script_spec(tmp_path, "files", CRASH_SCRIPT, timeout=20))
    other_catalog = Catalog(tmp_path / "other.json")
    other_catalog.write([tool("send_mail", "Send an email")])
    other = McpSource(
        ServerSpec(
            name="mail",
            transport="stdio",
            command=good.spec.command,
            args=(good.spec.args[0], str(other_catalog.path)),
            timeout=20,
        )
    )
    report = sync(engine, [broken, other])
    failed, ok = report.sources
    assert failed.error is not None and "'files'" in failed.error
    assert failed.failed == 1 and failed.deleted == 0
    assert ok.added == 1
    assert {t.id for t in engine.store.tools.list_tools()} == {
        "files::read_file",
        "files::write_file",
        "mail::send_mail",
    }


def test_a_tool_with_an_unusable_schema_is_a_problem_the_rest_are_indexed(
    catalog: Catalog, stdio_spec: Callable[..., ServerSpec]
) -> None:
    # Valid MCP (the SDK accepts any object), but properties must map names to schemas.
    bad = {"name": "weird", "inputSchema": {"type": "object", "properties": ["a", "b"]}}
    catalog.write([FIVE_TOOLS[0], bad])
    loaded = McpSource(stdio_spec()).read()
    assert [t.name for t in loaded.tools] == ["read_file"]
    assert [p.field for p in loaded.problems] == ["inputSchema.properties"]


def test_a_server_answering_with_an_invalid_listing_fails_with_its_name(
    catalog: Catalog, stdio_spec: Callable[..., ServerSpec]
) -> None:
    # The SDK refuses a tool whose input schema is not an object: the listing as a whole fails.
    catalog.write([FIVE_TOOLS[0], {"name": "weird", "inputSchema": {"type": "string"}}])
    with pytest.raises(IngestError, match=r"'files'.*invalid"):
        McpSource(stdio_spec("files")).read()


RENDEZVOUS = """
import os, runpy, sys, time
mine, other = sys.argv[1], sys.argv[2]
open(mine, "w").close()
deadline = time.monotonic() + 30
while not os.path.exists(other):  # each server answers only once its peer has started too
    if time.monotonic() > deadline:
        sys.exit("peer never started")
    time.sleep(0.02)
sys.argv = sys.argv[3:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_servers_are_listed_concurrently(
    engine: Engine, tmp_path: Path, server_script: Path, catalog: Catalog
) -> None:
    catalog.write([tool("read_file", "Read a file")])
    wrapper = tmp_path / "rendezvous.py"
    wrapper.write_text(RENDEZVOUS, encoding="utf-8")
    a, b = tmp_path / "a.started", tmp_path / "b.started"

    def spec(name: str, mine: Path, other: Path) -> McpSource:
        args = (str(wrapper), str(mine), str(other), str(server_script), str(catalog.path))
        # Listed one after the other, the first would time out waiting for its peer.
        return McpSource(
            ServerSpec(name=name, transport="stdio", command=sys.executable, args=args, timeout=10)
        )

    report = sync(engine, [spec("left", a, b), spec("right", b, a)])
    assert [(s.source, s.added, s.error) for s in report.sources] == [
        ("mcp:left", 1, None),
        ("mcp:right", 1, None),
    ]


def test_sse_server_is_listed_from_a_config_url(
    tmp_path: Path, catalog: Catalog, sse_url: str
) -> None:
    catalog.write(FIVE_TOOLS[:3])
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"servers": {"legacy-web": {"url": sse_url}}}), "utf-8")
    (spec,) = read_mcp_config(config, timeout=20).servers
    assert spec.transport == "sse"  # from the /sse path
    loaded = McpSource(spec).read()
    assert sorted(t.id for t in loaded.tools) == sorted(
        f"legacy-web::{t['name']}" for t in FIVE_TOOLS[:3]
    )
