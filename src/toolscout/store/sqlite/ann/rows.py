"""Reading what the shard mirrors from the SQLite file: the change log's position, the index's
epoch, and tool rows as shard points."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from toolscout.store.sqlite.ann.shard import Row
from toolscout.store.sqlite.rowreads import in_chunks, of_rowids

_ROWS = (
    "SELECT t.rowid, t.id, t.server, t.source, t.item_type, v.embedding, "
    "(SELECT json_group_array(s.skill_id) FROM tool_skills s WHERE s.tool_id = t.id) "
    "FROM tools t JOIN tools_vec v ON v.rowid = t.rowid"
)
#: Rows read and written per step of a catch-up or a build.
CHUNK = 2000


@dataclass(frozen=True)
class LogState:
    """The committed state the shard is compared with."""

    epoch: str
    tools: int
    #: The last change's sequence number (0: none yet) and the oldest one kept.
    last: int
    oldest: int


def log_state(conn: Any, known: LogState | None = None) -> LogState:
    """Read from ``conn`` (a sqlean connection) inside the caller's lock. Tools are counted
    only when the log moved since ``known`` (every change of the tool rows is logged), so a
    write elsewhere in the file (feedback, enrichment) costs three index lookups."""
    epoch = conn.execute("SELECT value FROM meta WHERE key='vectors_epoch'").fetchone()
    # min() and max() in one statement would scan; each alone reads one end of the key.
    last = conn.execute("SELECT max(seq) FROM tools_changes").fetchone()[0]
    oldest = conn.execute("SELECT min(seq) FROM tools_changes").fetchone()[0]
    state = LogState(str(epoch[0]) if epoch else "", -1, int(last or 0), int(oldest or 0))
    if known is not None and (known.epoch, known.last, known.oldest) == (
        state.epoch,
        state.last,
        state.oldest,
    ):
        return known
    tools = conn.execute("SELECT count(*) FROM tools").fetchone()[0]
    return LogState(state.epoch, int(tools), state.last, state.oldest)


def _row(raw: Sequence[Any]) -> Row:
    skills = sorted({s for s in json.loads(raw[6] or "[]") if s is not None})
    return Row(
        rowid=int(raw[0]),
        tool_id=str(raw[1]),
        server=raw[2],
        source=raw[3],
        item_type=str(raw[4]),
        skill_ids=skills,
        vector=np.frombuffer(raw[5], dtype=np.float32),
    )


def all_tool_ids(conn: Any) -> dict[int, str]:
    """Every row's tool id by rowid (read from the ids' own index, not the rows)."""
    return {int(r[0]): str(r[1]) for r in conn.execute("SELECT rowid, id FROM tools")}


def tool_ids(conn: Any, rowids: Sequence[int]) -> dict[int, str]:
    """The tool id of each present row among ``rowids``."""
    found = conn.execute(
        "SELECT rowid, id FROM tools WHERE rowid IN (SELECT value FROM json_each(?))",
        (json.dumps(list(rowids)),),
    ).fetchall()
    return {int(r[0]): str(r[1]) for r in found}


def changed_rows(conn: Any, since: int, until: int) -> list[int]:
    """Rowids changed by the log entries in (since, until]."""
    found = conn.execute(
        "SELECT DISTINCT row FROM tools_changes WHERE seq > ? AND seq <= ? ORDER BY row",
        (since, until),
    ).fetchall()
    return [int(r[0]) for r in found]


def rows_of(conn: Any, rowids: Sequence[int]) -> tuple[list[Row], list[int]]:
    """The present rows among ``rowids`` and the rowids that are gone."""
    return of_rowids(conn, _ROWS, _row, rowids)


def all_rows(conn: Any) -> Iterator[list[Row]]:
    """Every tool row, in chunks, in rowid order."""
    return in_chunks(conn, _ROWS, _row, CHUNK)
