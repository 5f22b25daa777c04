"""The watcher: real files changed under watchfiles, a real MCP server announcing changes."""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support.mcp_test_servers import Catalog, tool
from toolscout.engine import Engine
from toolscout.ingest.mcpconfig import ServerSpec
from toolscout.sync.sync import SourceSet, SourceSummary, catalog_source
from toolscout.sync.watch import Watcher

WAIT = 30.0  # generous bound for a busy CI machine; the usual wait is well under a second


class Running:
    """A watcher in its own thread, its summaries delivered through a queue."""

    def __init__(self, engine: Engine, sources: SourceSet, **options: float) -> None:
        self.summaries: queue.Queue[SourceSummary] = queue.Queue()
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.watcher = Watcher(engine, sources, on_sync=self.summaries.put, **options)  # type: ignore[arg-type]
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.watcher.run(self.stop)
        except BaseException as exc:  # surfaced by the test through wait_for / close
            self.errors.append(exc)
            self.summaries.put(SourceSummary(source="(watcher)", error=repr(exc)))

    def wait_for(self, predicate: Callable[[SourceSummary], bool]) -> SourceSummary:
        """The first summary matching ``predicate``; fails after WAIT seconds."""
        while True:
            try:
                summary = self.summaries.get(timeout=WAIT)
            except queue.Empty:
                pytest.fail(f"no matching sync within {WAIT} s")
            if self.errors:
                raise self.errors[0]
            if predicate(summary):
                return summary

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=WAIT)
        assert not self.thread.is_alive(), "the watcher did not stop"
        if self.errors:
            raise self.errors[0]


@pytest.fixture
def running(engine: Engine) -> Iterator[Callable[..., Running]]:
    started: list[Running] = []

    def start(sources: SourceSet, **options: float) -> Running:
        run = Running(engine, sources, **options)
        run.thread.start()
        started.append(run)
        return run

    yield start
    for run in started:
        run.close()


def tool_file(root: Path, name: str, doc: str) -> Path:
    path = root / "mcptools" / "notes" / f"{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'def run(text: str):\n    """{doc}"""\n', encoding="utf-8")
    return path


def test_created_modified_and_deleted_tool_files_are_reflected_in_search(
    engine: Engine, tmp_path: Path, running: Callable[..., Running]
) -> None:
    root = tmp_path / "tools"
    tool_file(root, "save_note", "Save a note to the notebook")
    run = running(SourceSet(tool_dirs=(root,)), debounce_ms=50)
    run.wait_for(lambda s: s.added == 1)

    tool_file(root, "archive_note", "Move an old note into the archive drawer")
    run.wait_for(lambda s: s.added == 1)
    assert engine.search("archive drawer", limit=1).hits[0].tool.id == "mcptools:notes:archive_note"

    tool_file(root, "save_note", "Persist a memo inside the journal")
    run.wait_for(lambda s: s.updated >= 1)
    assert engine.get_tool("mcptools:notes:save_note").description == (
        "Persist a memo inside the journal"
    )
    assert engine.search("memo journal", limit=1).hits[0].tool.id == "mcptools:notes:save_note"

    (root / "mcptools" / "notes" / "archive_note.py").unlink()
    run.wait_for(lambda s: s.deleted == 1)
    assert {t.id for t in engine.store.tools.list_tools()} == {"mcptools:notes:save_note"}


def test_a_broken_save_is_reported_and_the_fixed_save_is_indexed(
    engine: Engine, tmp_path: Path, running: Callable[..., Running]
) -> None:
    root = tmp_path / "tools"
    path = tool_file(root, "convert", "Convert units")
    run = running(SourceSet(tool_dirs=(root,)), debounce_ms=50)
    run.wait_for(lambda s: s.added == 1)
    path.write_text("def run(:\n", encoding="utf-8")  # half-typed edit
    broken = run.wait_for(lambda s: bool(s.problems))
    assert broken.problems[0].field == "(syntax)"
    assert broken.deleted == 0  # the indexed version is kept while the file is broken
    assert engine.get_tool("mcptools:notes:convert").description == "Convert units"
    tool_file(root, "convert", "Convert between metric and imperial units")
    run.wait_for(lambda s: s.updated == 1 and not s.problems)
    assert "imperial" in engine.get_tool("mcptools:notes:convert").description


def test_a_broken_file_holds_back_only_its_own_tool_while_a_deletion_elsewhere_proceeds(
    engine: Engine, tmp_path: Path, running: Callable[..., Running]
) -> None:
    root = tmp_path / "tools"
    broken = tool_file(root, "convert", "Convert units")
    gone = tool_file(root, "shout", "Upper-case a text")
    run = running(SourceSet(tool_dirs=(root,)), debounce_ms=50)
    run.wait_for(lambda s: s.added == 2)
    broken.write_text("def run(:\n", encoding="utf-8")
    run.wait_for(lambda s: bool(s.problems))
    gone.unlink()
    summary = run.wait_for(lambda s: s.deleted == 1)
    assert {t.id for t in engine.store.tools.list_tools()} == {"mcptools:notes:convert"}
    assert any(
        p.location == str(broken) and "'mcptools:notes:convert'" in p.message
        for p in summary.problems
    )


def test_catalog_file_edits_and_deletion_are_reflected(
    engine: Engine, tmp_path: Path, running: Callable[..., Running]
) -> None:
    path = tmp_path / "catalogs" / "weather.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"tools": [tool("forecast", "Weather forecast")]}), "utf-8")
    (tmp_path / "catalogs" / "unrelated.json").write_text("{}", "utf-8")
    run = running(SourceSet(catalogs=(path,)), debounce_ms=50)
    run.wait_for(lambda s: s.added == 1)

    tools = [tool("forecast", "Weather forecast"), tool("tides", "Tide tables for a harbour")]
    path.write_text(json.dumps({"tools": tools}), "utf-8")
    run.wait_for(lambda s: s.added == 1)
    assert engine.search("harbour tide", limit=1).hits[0].tool.id == "weather::tides"

    path.unlink()
    gone = run.wait_for(lambda s: s.deleted == 2)
    assert gone.source == catalog_source(path)
    assert engine.store.count() == 0


def test_server_change_notification_resyncs_without_waiting_for_the_interval(
    engine: Engine,
    catalog: Catalog,
    stdio_spec: Callable[..., ServerSpec],
    running: Callable[..., Running],
) -> None:
    catalog.write([tool("read_file", "Read a file")])
    # An interval far beyond the test's wait: only the notification can trigger the re-list.
    run = running(SourceSet(servers=(stdio_spec("files"),)), relist_interval=3600.0)
    run.wait_for(lambda s: s.added == 1)

    catalog.write([tool("read_file", "Read a file"), tool("tail_log", "Follow a growing log file")])
    summary = run.wait_for(lambda s: s.added == 1)
    assert summary.source == "mcp:files"
    assert engine.search("follow growing log", limit=1).hits[0].tool.id == "files::tail_log"


def test_relist_interval_picks_up_changes_from_a_server_that_never_notifies(
    engine: Engine,
    tmp_path: Path,
    catalog: Catalog,
    stdio_spec: Callable[..., ServerSpec],
    running: Callable[..., Running],
) -> None:
    spec = stdio_spec("quiet")
    # The same server script with its change publisher disabled by a catalog it cannot stat
    # is not possible, so the test uses a fresh copy that only answers lists.
    quiet_script = tmp_path / "quiet_server.py"
    quiet_script.write_text(
        Path(spec.args[0])
        .read_text(encoding="utf-8")
        .replace("await bus.publish(ToolsListChanged())", "pass"),
        encoding="utf-8",
    )
    quiet = ServerSpec(
        name="quiet",
        transport="stdio",
        command=spec.command,
        args=(str(quiet_script), spec.args[1]),
        timeout=20,
    )
    catalog.write([tool("ping", "Ping a host")])
    run = running(SourceSet(servers=(quiet,)), relist_interval=0.5)
    run.wait_for(lambda s: s.added == 1)
    catalog.write([tool("ping", "Ping a host"), tool("trace", "Trace the route to a host")])
    run.wait_for(lambda s: s.added == 1)
    assert engine.get_tool("quiet::trace").description == "Trace the route to a host"


def test_a_server_that_fails_is_reported_and_files_keep_syncing(
    engine: Engine, tmp_path: Path, running: Callable[..., Running]
) -> None:
    root = tmp_path / "tools"
    tool_file(root, "jot", "Jot something down")
    ghost = ServerSpec(name="ghost", transport="stdio", command=str(tmp_path / "missing"))
    run = running(SourceSet(tool_dirs=(root,), servers=(ghost,)), debounce_ms=50)
    failed = run.wait_for(lambda s: s.error is not None)
    assert failed.source == "mcp:ghost" and "'ghost'" in str(failed.error)
    tool_file(root, "erase", "Erase a note")
    run.wait_for(lambda s: s.added == 1 and s.source.startswith("tools:"))
    assert engine.get_tool("mcptools:notes:erase").description == "Erase a note"


def test_start_in_thread_watches_until_stopped(engine: Engine, tmp_path: Path) -> None:
    root = tmp_path / "tools"
    tool_file(root, "first", "The first tool")
    summaries: queue.Queue[SourceSummary] = queue.Queue()
    watcher = Watcher(engine, SourceSet(tool_dirs=(root,)), debounce_ms=50, on_sync=summaries.put)
    stop = watcher.start_in_thread()
    try:
        assert summaries.get(timeout=WAIT).added == 1
        tool_file(root, "second", "The second tool")
        while summaries.get(timeout=WAIT).added != 1:
            pass
    finally:
        assert stop(WAIT), "the watch thread did not end"
    assert engine.get_tool("mcptools:notes:second").description == "The second tool"


def test_list_changed_notification_on_a_2025_era_session_resyncs(
    engine: Engine,
    catalog: Catalog,
    stdio_spec: Callable[..., ServerSpec],
    running: Callable[..., Running],
) -> None:
    spec = stdio_spec("legacy")
    legacy = ServerSpec(
        name="legacy",
        transport="stdio",
        command=spec.command,
        args=(*spec.args, "stdio", "session"),  # the server notifies on the session itself
        timeout=20,
        protocol="legacy",  # initialize handshake: notifications/tools/list_changed on the wire
    )
    catalog.write([tool("ping", "Ping a host")])
    run = running(SourceSet(servers=(legacy,)), relist_interval=3600.0)
    run.wait_for(lambda s: s.added == 1)
    catalog.write([tool("ping", "Ping a host"), tool("whois", "Look up who owns a domain")])
    run.wait_for(lambda s: s.added == 1)
    assert engine.get_tool("legacy::whois").description == "Look up who owns a domain"
