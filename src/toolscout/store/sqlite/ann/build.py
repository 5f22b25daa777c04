"""Building a shard from every row of an index, in process (small indexes) or in a child
process (large ones: building the HNSW graph holds the interpreter for seconds to minutes, so it
runs where it cannot stall searches)::

    python -m toolscout.store.sqlite.ann.build INDEX.db FOLDER DIM M EF_CONSTRUCT EF \
        FULL_SCAN_KB INDEXING_KB
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from toolscout.store.sqlite.ann.rows import all_rows, log_state
from toolscout.store.sqlite.ann.shard import EdgeIndex, GraphParams


def build_shard(conn: Any, folder: Path, *, dim: int, graph: GraphParams) -> EdgeIndex:
    """A new shard in ``folder`` holding every row ``conn`` sees in one read transaction,
    indexed and committed at the log position of that snapshot. Raises: StoreError."""
    conn.execute("BEGIN")
    try:
        state = log_state(conn)
        index = EdgeIndex.create(folder, epoch=state.epoch, dim=dim, graph=graph)
        try:
            for chunk in all_rows(conn):
                index.apply(chunk, [])
        except BaseException:
            index.close()
            raise
    finally:
        conn.execute("COMMIT")
    try:
        index.optimize()
        index.commit(state.last)
    except BaseException:
        index.close()
        raise
    return index


def main(argv: list[str]) -> int:
    from toolscout.store.sqlite.database import SQLiteDatabase

    db_path, folder, *numbers = argv
    dim, m, ef_construct, ef, full_scan_kb, indexing_kb = (int(n) for n in numbers)
    graph = GraphParams(m, ef_construct, ef, full_scan_kb, indexing_kb)
    database = SQLiteDatabase(Path(db_path), read_only=True)
    try:
        with database.lock:
            build_shard(database.conn, Path(folder), dim=dim, graph=graph).close()
    finally:
        database.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
