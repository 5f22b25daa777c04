"""A short load-during-write run: a real server answers 200 REST clients and 10 MCP clients
(its ``/mcp``, the same search gate) searching while a writer applies a new catalog version to
its index. Nothing fails: every REST request gets a result or a 503 with Retry-After, every MCP
call a result or the ``overloaded`` tool error (load shed at once instead of queued), and the
write completes whole."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from mcp import Client

from support.fault_integrity import check
from support.fault_setup import Scene, WriterPool

IN_FLIGHT = 200
MCP_CLIENTS = 10
RUNNING = re.compile(r"Uvicorn running on (http://\S+:\d+)")


def _drain(proc: subprocess.Popen[str], log: list[str]) -> None:
    with contextlib.suppress(ValueError):  # closed by the test after the server stopped
        log.extend(proc.stderr or ())


def _serve(db: Path, cache: Path) -> tuple[subprocess.Popen[str], str, list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSCOUT_")}
    env.update(
        TOOLSCOUT_DB=str(db),
        TOOLSCOUT_CACHE_DIR=str(cache),
        TOOLSCOUT_EMBED_THREADS="1",
        TOOLSCOUT_SEARCH_QUEUE="32",
        TOOLSCOUT_SEARCH_QUEUE_TIMEOUT="2",
        # The load client shares this busy machine; its coroutines can sit longer than the
        # default 5 s between requests and race the server closing idle connections.
        TOOLSCOUT_KEEP_ALIVE_TIMEOUT="60",
    )
    toolscout = str(Path(sys.executable).with_name("toolscout"))
    proc = subprocess.Popen(
        [toolscout, "serve", "--port", "0"], env=env, stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None
    log = []
    for line in proc.stderr:  # ends at EOF if the server dies
        log.append(line)
        found = RUNNING.search(line)
        if found:
            drain = threading.Thread(target=_drain, args=(proc, log), daemon=True)
            drain.start()  # keeps the pipe from filling; the log explains a failure
            return proc, found.group(1), log
    raise RuntimeError("server did not start: " + "".join(log))


async def _mcp_client(url: str, n: int, outcomes: Counter[str], done: Any) -> None:
    """One MCP session calling search_tools until ``done()``, at least three times."""
    try:
        async with Client(f"{url}/mcp") as session:
            i = 0
            while i < 3 or not done():
                i += 1
                args = {"query": f"find the {n} invoice number {i}"}
                result = await session.call_tool("search_tools", args)
                if not result.is_error:
                    outcomes["ok"] += 1
                    continue
                text = getattr(result.content[0], "text", "")
                shed = "overloaded: " in text and "retry in " in text
                outcomes["overloaded" if shed else f"error {text[:120]}"] += 1
                if shed:
                    await asyncio.sleep(1)  # as the message asks
    except Exception as exc:  # a transport failure is an outcome to report, not a crash
        outcomes[f"error {type(exc).__name__}: {exc}"] += 1


async def _load(
    url: str, written: threading.Event
) -> tuple[Counter[str], list[float], Counter[str]]:
    """Keep IN_FLIGHT REST clients and MCP_CLIENTS MCP sessions searching until the write is
    done and each REST client sent three requests."""
    outcomes: Counter[str] = Counter()
    mcp: Counter[str] = Counter()
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=IN_FLIGHT, max_keepalive_connections=IN_FLIGHT)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as http:

        async def client(n: int) -> None:
            i = 0
            while not (written.is_set() and sum(outcomes.values()) >= 3 * IN_FLIGHT):
                i += 1
                start = time.perf_counter()
                try:
                    r = await http.get(
                        "/api/v1/search", params={"query": f"update the {n} order number {i}"}
                    )
                except httpx.HTTPError as exc:
                    outcomes[f"error {type(exc).__name__}"] += 1
                    continue
                if r.status_code == 503:
                    assert r.headers.get("retry-after"), r.text
                    await asyncio.sleep(float(r.headers["retry-after"]))  # as a client should
                elif r.status_code == 200:
                    latencies.append(time.perf_counter() - start)
                outcomes[str(r.status_code)] += 1

        def done() -> bool:
            return written.is_set() and sum(outcomes.values()) >= 3 * IN_FLIGHT

        await asyncio.gather(
            *(client(n) for n in range(IN_FLIGHT)),
            *(_mcp_client(url, n, mcp, done) for n in range(MCP_CLIENTS)),
        )
    return outcomes, latencies, mcp


def test_searches_under_load_while_a_writer_applies_a_new_catalog(
    writer_pool: WriterPool, scene: Scene, tmp_path: Path, vector_cache: Path
) -> None:
    db = scene.copy(tmp_path / "served.db")
    proc, url, log = _serve(db, vector_cache)
    write_done = threading.Event()
    written: list[dict[str, object]] = []

    def write() -> None:
        try:
            request = {"op": "index", "db": str(db), "prune": True}
            written.extend(
                writer_pool.run({**request, "catalogs": [str(c) for c in scene.catalogs]})
            )
        finally:
            write_done.set()

    writer = threading.Thread(target=write)
    try:
        writer.start()
        outcomes, latencies, mcp = asyncio.run(_load(url, write_done))
        writer.join(timeout=300)
    finally:
        write_done.set()
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stderr is not None:
            proc.stderr.close()
    assert not writer.is_alive() and written and written[0]["exit"] == 0
    assert check(db).tools == scene.v2
    sent = sum(outcomes.values())
    print(
        f"load during write: {sent} REST requests, {dict(outcomes)}, "
        f"p50 {1000 * statistics.median(latencies):.0f} ms of {len(latencies)} answered; "
        f"{sum(mcp.values())} MCP calls, {dict(mcp)}"
    )
    assert outcomes["200"] > 0 and mcp["ok"] > 0
    assert set(outcomes) <= {"200", "503"}, (outcomes, "".join(log[-30:]))  # no error or 5xx
    assert set(mcp) <= {"ok", "overloaded"}, (mcp, "".join(log[-30:]))
