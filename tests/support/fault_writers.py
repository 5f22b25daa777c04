"""A writer pool for the fault suite: loads the embedding model once, then forks one real writer
process per request and reports how it ended.

Run as a script; it reads one JSON request per line on stdin and answers one JSON line on stdout:

    {"writers": [{"op": "index", "db": "...", "catalogs": [...], "prune": true,
                  "kill_at": 123, "options": "?ann_min_tools=0"}, ...]}

(ops: index, sync, classify, rebuild; feedback with ``"records": [[query, tool_id, outcome],
...]``, each recorded as one call; search with ``"query"``, the top 5 ids in the report)
    -> {"results": [{"killed": true, "exit": null, "statements": 123, "commits": [...],
                     "report": null}, ...]}

``options`` are store URL options for a SQLite index (``?ann_min_tools=0`` keeps its HNSW
shard in step with every commit); ``commits`` lists the statement numbers of a SQLite run's
COMMITs, so a test can kill just after one (between the SQLite commit and the shard's write).

Each writer is a forked child that opens its own store (nothing SQLite or PostgreSQL crosses the
fork: the parent holds only the ONNX model) and runs one operation the way the CLI does. With
``kill_at`` the child sends itself SIGKILL just before its ``kill_at``-th SQL statement on the
index (a SQLite file, or any statement psycopg sends when ``db`` is a PostgreSQL URL), so
kill points are chosen by seed and reproducible, and can land inside a transaction, between
chunks, or just before a COMMIT. Several writers in one request run at the same time.

Loading the model once is what makes dozens of kills fit in CI's budget: a fresh process needs
~4 s to import and load the model, a fork ~50 ms.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

import sqlean

from toolscout.config import Settings
from toolscout.embed.base import open_embedder
from toolscout.embed.cache import CachedEmbedder
from toolscout.engine import Engine
from toolscout.errors import IngestError
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.store.base import open_store
from toolscout.sync.sync import sync


class _Counting:
    """A sqlean connection that counts statements and SIGKILLs its process at one of them."""

    def __init__(
        self, conn: Any, kill_at: int | None, counter: list[int], commits: list[int]
    ) -> None:
        self._conn = conn
        self._kill_at = kill_at
        self._counter = counter
        self._commits = commits

    def _tick(self) -> None:
        self._counter[0] += 1
        if self._kill_at is not None and self._counter[0] >= self._kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    def backup(self, target: Any, *args: Any, **kwargs: Any) -> Any:
        self._tick()
        inner = target._conn if isinstance(target, _Counting) else target
        return self._conn.backup(inner, *args, **kwargs)

    def execute(self, *args: Any) -> Any:
        self._tick()
        if args and str(args[0]).strip().upper() == "COMMIT":
            self._commits.append(self._counter[0])
        return self._conn.execute(*args)

    def executemany(self, *args: Any) -> Any:
        self._tick()
        return self._conn.executemany(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _install_counter(db: str, kill_at: int | None, commits: list[int]) -> list[int]:
    counter = [0]
    real_connect = sqlean.connect
    target = os.path.realpath(db)

    def connect(path: Any, *args: Any, **kwargs: Any) -> Any:
        conn = real_connect(path, *args, **kwargs)
        # The index and the new index a rebuild builds beside it (``<index>.rebuild``).
        if os.path.realpath(str(path)).startswith(target):
            return _Counting(conn, kill_at, counter, commits)
        return conn

    sqlean.connect = connect
    return counter


def _install_pg_counter(kill_at: int | None) -> list[int]:
    """Count the statements psycopg sends (every cursor's execute, executemany and COPY, the
    pool's own included) and SIGKILL this process just before the ``kill_at``-th."""
    import psycopg

    counter = [0]

    def counted(real: Any) -> Any:
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            counter[0] += 1
            if kill_at is not None and counter[0] >= kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(self, *args, **kwargs)

        return call

    for name in ("execute", "executemany", "copy"):
        setattr(psycopg.Cursor, name, counted(getattr(psycopg.Cursor, name)))
    return counter


def _engine_op(engine: Engine, op: str, request: dict[str, Any]) -> Any:
    """One operation on an open engine, the way the CLI runs it; its report."""
    if op == "index":
        loads, unusable = [], []
        for c in request.get("catalogs", []):
            try:  # as `toolscout index` does: an unreadable file is reported and left out
                loads.append(CatalogFile(Path(c)).read())
            except IngestError as exc:
                unusable.append(str(exc))
        report: Any = engine.index(loads, prune=bool(request.get("prune"))).to_dict()
        report["unusable"] = unusable
    elif op == "sync":
        sources = [CatalogFile(Path(c)) for c in request["catalogs"]]
        report = sync(engine, sources).to_dict()
    elif op == "feedback":  # each call recorded as the gateway records it
        for query, tool_id, outcome in request["records"]:
            engine.feedback.record(query, tool_id, outcome, source="gateway")
        report = {"recorded": len(request["records"])}
    elif op == "search":
        found = engine.search(request["query"], limit=5)
        report = {"ids": [hit.tool.id for hit in found.tools]}
    elif op == "classify":
        done = engine.classify(all=True)
        report = {"processed": done.processed, "total": done.total, "errors": done.errors}
    else:
        raise ValueError(f"unknown op {op!r}")
    return report


def _run(request: dict[str, Any], embedder: Any, settings: Settings) -> dict[str, Any]:
    """Runs in the forked child."""
    commits: list[int] = []
    if request["db"].startswith("postgresql"):
        counter = _install_pg_counter(request.get("kill_at"))
    else:
        counter = _install_counter(request["db"], request.get("kill_at"), commits)
    url = request["db"] + request.get("options", "")
    cached = CachedEmbedder(embedder, Path(settings.cache_dir) / "vectors.sqlite")

    def open_engine(url: str) -> Engine:
        opened = Engine(open_store(url), cached, result_cache_size=0)
        return opened

    op = request["op"]
    if op == "rebuild":
        from toolscout.sync.rebuild import rebuild_index

        loads = [CatalogFile(Path(c)).read() for c in request["catalogs"]]
        db_settings = settings.model_copy(update={"db": url})
        rebuilt = rebuild_index(db_settings, loads, open_engine=open_engine)
        return {"statements": counter[0], "commits": commits, "report": rebuilt.to_dict()}
    engine = open_engine(url)
    try:
        report = _engine_op(engine, op, request)
    finally:
        engine.close()
    return {"statements": counter[0], "commits": commits, "report": report}


def _fork(request: dict[str, Any], embedder: Any, settings: Settings) -> tuple[int, str]:
    fd, out = tempfile.mkstemp(prefix="fault-writer-", suffix=".json")
    os.close(fd)
    pid = os.fork()
    if pid == 0:  # the writer
        code = 0
        try:
            result = _run(request, embedder, settings)
            Path(out).write_text(json.dumps(result), encoding="utf-8")
        except BaseException:
            Path(out).write_text(json.dumps({"error": traceback.format_exc()}), encoding="utf-8")
            code = 1
        os._exit(code)
    return pid, out


def _collect(pid: int, out: str) -> dict[str, Any]:
    _, status = os.waitpid(pid, 0)
    killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    try:
        text = Path(out).read_text(encoding="utf-8")
    finally:
        os.unlink(out)
    result: dict[str, Any] = json.loads(text) if text else {}
    result["killed"] = killed
    result["exit"] = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    return result


def main() -> None:
    settings = Settings(embed_threads=1, query_encoder="exact", blas_threads=1)
    embedder = open_embedder(
        settings.embed_model,
        threads=1,
        query_encoder="exact",
        cache_dir=Path(settings.cache_dir),
    )
    embedder.embed(["warm up"])  # one inference in the parent: children start warm
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        writers = json.loads(line)["writers"]
        started = [_fork(w, embedder, settings) for w in writers]
        results = [_collect(pid, out) for pid, out in started]
        print(json.dumps({"results": results}), flush=True)


if __name__ == "__main__":
    main()
