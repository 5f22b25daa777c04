"""The learned ranker's table of every tool's name and server (search/nametable.py), on every
backend: the store's paged read walks the whole catalog once, and the table serves a version
only once it has read that version whole, then follows writes."""

from __future__ import annotations

from dataclasses import replace

from support.backends import entry, unit
from toolscout.search.candidates import candidate
from toolscout.search.nametable import NameTable, read_snapshot
from toolscout.store.base import Store


def _fill(store: Store) -> dict[str, tuple[str, str | None]]:
    entries = [
        entry("files::read_file", "read file", unit(1, 0.1)),
        entry("files::write_file", "write file", unit(0.9, 0.4)),
        entry("git::commit", "commit chang", unit(0, 1), server="git"),
        entry("git::log", "show commit histori", unit(0.1, 0.9), server="git"),
        entry("web::fetch", "fetch web page", unit(0, 0, 1), server="web"),
    ]
    lone = entry("lone", "a tool of no server", unit(0, 1, 1))
    entries.append(replace(lone, tool=replace(lone.tool, server=None)))
    store.upsert(entries)
    return {e.tool.id: (e.tool.name, e.tool.server) for e in entries}


def test_name_pages_walk_every_tool_once_in_id_order(store: Store) -> None:
    stored = _fill(store)
    walked: list[tuple[str, str, str | None]] = []
    after = ""
    while True:
        page = store.tools.name_page(after, 4)
        walked.extend(page)
        if len(page) < 4:
            break
        after = page[-1][0]
    assert walked == [(tid, *stored[tid]) for tid in sorted(stored)]
    assert store.tools.name_page(walked[-1][0], 4) == []


def test_a_snapshot_holds_each_tools_view(store: Store) -> None:
    stored = _fill(store)
    snapshot = read_snapshot(store.tools, "v", page=2)
    assert snapshot is not None
    want = {tid: candidate(tid, name, server) for tid, (name, server) in stored.items()}
    assert snapshot.views([*stored, "nope"]) == want
    assert snapshot.views(["lone"])["lone"].server == "lone"
    # Repeated servers are held once.
    assert sorted(snapshot.servers) == ["", "files", "git", "web"]


def test_the_table_serves_a_version_once_read_whole_and_follows_writes(store: Store) -> None:
    stored = _fill(store)
    table = NameTable(store.tools, lambda: store.state().version, min_tools=0, page=2, rest=0)
    ids = list(stored)
    state = store.state()
    assert table.views(ids, state.version, state.tools) is None  # not loaded: a load starts
    assert table.wait_loaded(30)
    held = table.views(ids, state.version, state.tools)
    assert held == {tid: candidate(tid, *stored[tid]) for tid in ids}
    renamed = entry("git::log", "show commit histori", unit(0.1, 0.9), server="web")
    store.upsert([replace(renamed, tool=replace(renamed.tool, name="history"))])
    after = store.state()
    assert after.version != state.version
    assert table.views(ids, after.version, after.tools) is None  # another version: not served
    assert table.wait_loaded(30)
    moved = table.views(["git::log"], after.version, after.tools)
    assert moved == {"git::log": candidate("git::log", "history", "web")}
    assert table.describe()["tools"] == len(stored)
    table.close()
    assert table.views(ids, after.version, after.tools) is None


def test_a_small_catalog_is_not_loaded(store: Store) -> None:
    stored = _fill(store)
    table = NameTable(store.tools, lambda: store.state().version, min_tools=len(stored) + 1)
    state = store.state()
    assert table.views(list(stored), state.version, state.tools) is None
    assert table.wait_loaded(30) and table.describe() == {"tools": 0, "loading": False, "loads": 0}
