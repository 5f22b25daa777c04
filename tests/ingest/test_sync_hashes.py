"""Hash-based incremental sync: per-source summaries, no embedding for an unchanged world,
and a SIGKILL in the middle of a sync leaves a consistent index that the next sync completes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import sqlean
import sqlite_vec

from support.mcp_test_servers import Catalog, tool
from toolscout.config import Settings
from toolscout.embed.base import Embedder, EmbedderWrapper, Vectors
from toolscout.engine import Engine
from toolscout.ingest.mcp import McpSource
from toolscout.ingest.mcpconfig import ServerSpec
from toolscout.ingest.pyfile import ToolDirectory
from toolscout.sync.sync import catalog_source, resolve_sources, sync


class CountingEmbedder(EmbedderWrapper):
    """The real embedder, counting the texts the engine asks it to embed."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts += len(texts)
        return self.inner.embed(texts)


def write_tools(root: Path, tools: dict[str, str]) -> None:
    for name, doc in tools.items():
        path = root / "mcptools" / "demo" / f"{name}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'def run(x: str):\n    """{doc}"""\n', encoding="utf-8")


def test_unchanged_resync_embeds_nothing_and_changes_embed_only_themselves(
    engine: Engine,
    tmp_path: Path,
    catalog: Catalog,
    stdio_spec: Callable[..., ServerSpec],
) -> None:
    counting = CountingEmbedder(engine.embedder)
    engine.embedder = counting
    write_tools(tmp_path / "tools", {"greet": "Say hello to a person", "add": "Add two numbers"})
    catalog_file = tmp_path / "catalog.json"
    catalog_file.write_text(json.dumps({"tools": [tool("ping", "Check a host is up")]}))
    catalog.write([tool("read_file", "Read a file"), tool("write_file", "Write a file")])
    found = resolve_sources(catalogs=[catalog_file], tools_dirs=[tmp_path / "tools"], timeout=20)
    sources = [*found.file_sources(), McpSource(stdio_spec("files"))]

    first = sync(engine, sources)
    assert [(s.source, s.added) for s in first.sources] == [
        (catalog_source(catalog_file), 1),
        (f"tools:{(tmp_path / 'tools').resolve()}", 2),
        ("mcp:files", 2),
    ]
    assert first.total("embedded") == 5

    counting.texts = 0
    again = sync(engine, sources)
    assert counting.texts == 0
    assert again.total("embedded") == 0
    assert [s.unchanged for s in again.sources] == [1, 2, 2]
    assert again.total("added") + again.total("updated") + again.total("deleted") == 0

    write_tools(tmp_path / "tools", {"greet": "Wave at a person and say good morning"})
    counting.texts = 0
    third = sync(engine, sources)
    tools_summary = third.sources[1]
    assert (tools_summary.updated, tools_summary.unchanged) == (1, 1)
    assert counting.texts == 1
    assert engine.search("good morning wave", limit=1).hits[0].tool.id == "mcptools:demo:greet"


def test_deleted_tool_file_disappears_and_other_sources_are_untouched(
    engine: Engine, tmp_path: Path
) -> None:
    write_tools(tmp_path / "a", {"one": "First tool", "two": "Second tool"})
    write_tools(tmp_path / "b", {"three": "Third tool"})
    a, b = ToolDirectory(tmp_path / "a"), ToolDirectory(tmp_path / "b")
    sync(engine, [a, b])
    (tmp_path / "a" / "mcptools" / "demo" / "two.py").unlink()
    # Only ``a`` is synced: pruning is per source, so ``b``'s tool stays.
    report = sync(engine, [a])
    summary = report.sources[0]
    # "one" may be re-embedded when enrichment derives text from its siblings; never re-added.
    assert (summary.deleted, summary.added, summary.updated + summary.unchanged) == (1, 0, 1)
    assert report.sources[0].to_dict()["failed"] == 0
    # Both folders list a tool with id mcptools:demo:one / three; ids are per layout.
    assert {t.id for t in engine.store.tools.list_tools()} == {
        "mcptools:demo:one",
        "mcptools:demo:three",
    }


def test_a_folder_that_vanished_keeps_its_tools(engine: Engine, tmp_path: Path) -> None:
    write_tools(tmp_path / "gone", {"keep": "Keep me"})
    source = ToolDirectory(tmp_path / "gone")
    sync(engine, [source])
    for path in sorted((tmp_path / "gone").rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    (tmp_path / "gone").rmdir()
    report = sync(engine, [source]).sources[0]
    assert report.error is not None and "not a directory" in report.error
    assert report.deleted == 0
    assert engine.get_tool("mcptools:demo:keep").description == "Keep me"


# -- crash safety ----------------------------------------------------------------------------
KILL_CATALOG_SIZE = 96
#: The sync runs the real CLI with smaller chunks, so a kill lands between commits quickly.
RUN_CLI_WITH_SMALL_CHUNKS = (
    "import sys, toolscout.indexing as e; e.EMBED_CHUNK = 8; "
    "from toolscout.cli import main; sys.argv[0] = 'toolscout'; main()"
)


def _rows(db: Path) -> tuple[int, int, int, int]:
    """(tools, tools without text, tools without vector, orphan vectors) read with raw SQL."""
    conn = sqlean.connect(str(db))
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    try:
        tools = conn.execute("SELECT count(*) FROM tools").fetchone()[0]
        no_text = conn.execute(
            "SELECT count(*) FROM tools t WHERE NOT EXISTS "
            "(SELECT 1 FROM tools_fts f WHERE f.rowid = t.rowid)"
        ).fetchone()[0]
        vec_ids = {r[0] for r in conn.execute("SELECT rowid FROM tools_vec")}
        tool_ids = {r[0] for r in conn.execute("SELECT rowid FROM tools")}
        return tools, no_text, len(tool_ids - vec_ids), len(vec_ids - tool_ids)
    finally:
        conn.close()


def _committed(db: Path) -> int:
    if not db.exists():
        return 0
    conn = sqlean.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM tools").fetchone()[0])
    except sqlean.OperationalError:  # schema not created yet
        return 0
    finally:
        conn.close()


def test_sigkill_mid_sync_leaves_a_consistent_index_that_the_next_sync_completes(
    tmp_path: Path, settings: Settings
) -> None:
    catalog_file = tmp_path / "big.jsonl"
    lines = [
        json.dumps(
            {
                "id": f"t{i:03d}",
                "name": f"tool_{i}",
                "description": f"Tool number {i} handles task {i * 7919 % 1000} for project {i}",
            }
        )
        for i in range(KILL_CATALOG_SIZE)
    ]
    catalog_file.write_text("\n".join(lines), encoding="utf-8")
    db = tmp_path / "killed.db"
    # Enrichment off: with it, a server profile that grows with the catalog legitimately
    # re-embeds the committed tools, which would hide what this test checks (the write path).
    env = dict(
        os.environ, TOOLSCOUT_CACHE_DIR=str(tmp_path / "fresh-cache"), TOOLSCOUT_ENRICH="none"
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            RUN_CLI_WITH_SMALL_CHUNKS,
            "sync",
            "--db",
            str(db),
            str(catalog_file),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        # Wait (bounded) for the first committed chunk, then kill without warning.
        seen = 0
        deadline_polls = 6000
        for _ in range(deadline_polls):
            seen = _committed(db)
            if seen > 0 or proc.poll() is not None:
                break
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        assert proc.stderr is not None
        stderr = proc.stderr.read().decode(errors="replace")
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL, f"the sync ended before the kill: {stderr[-2000:]}"
    tools, no_text, no_vector, orphans = _rows(db)
    assert 0 < tools < KILL_CATALOG_SIZE, f"kill landed outside the sync ({tools} tools)"
    assert tools % 8 == 0  # whole chunks only
    assert (no_text, no_vector, orphans) == (0, 0, 0)

    engine = Engine.open(settings.model_copy(update={"db": str(db), "enrich": "none"}))
    try:
        source = resolve_sources(catalogs=[catalog_file]).file_sources()
        summary = sync(engine, source).sources[0]
        # Committed chunks are found by hash: only the rest is embedded.
        assert (summary.added, summary.unchanged) == (KILL_CATALOG_SIZE - tools, tools)
        assert summary.embedded == KILL_CATALOG_SIZE - tools
    finally:
        engine.close()
    assert _rows(db) == (KILL_CATALOG_SIZE, 0, 0, 0)


def test_a_tool_that_moves_to_another_source_survives_pruning_of_the_old_one(
    engine: Engine, tmp_path: Path
) -> None:
    # An explicit id: ids derived from a name are namespaced by file, so they would not collide.
    entry = {"tools": [{**tool("convert", "Convert currencies"), "id": "convert"}]}
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(entry), encoding="utf-8")
    sync(engine, resolve_sources(catalogs=[old]).file_sources())
    new.write_text(json.dumps(entry), encoding="utf-8")
    old.write_text(json.dumps({"tools": []}), encoding="utf-8")
    sync(engine, resolve_sources(catalogs=[new, old]).file_sources())
    moved = engine.get_tool("convert")
    assert moved.source == catalog_source(new)
