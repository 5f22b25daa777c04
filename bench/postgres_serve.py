"""REST throughput: ``toolscout serve --workers 2`` on PostgreSQL vs on the SQLite file.

    python bench/postgres_serve.py --size 10000 --connections 64 --seconds 30

Builds the catalog of bench/postgres.py (same entries, same vectors) in an embedded PostgreSQL
and in a SQLite file, then for each store starts ``toolscout serve --workers 2`` and drives
``GET /api/v1/search?query=...&limit=10`` (hybrid) with ``wrk`` (Debian package) at the given
number of connections, rotating over 200 shared-set queries. Each worker keeps a query-vector
cache, so after the first pass the figure is the search itself, not the embedding model; the
result cache is off (it would answer every request after the warm-up without the store).
Beside throughput and latency it reports CPU per answered request: of the toolscout server
processes, and of the PostgreSQL server (every backend), read from ``/proc`` around the timed
run. Results print as Markdown and land in bench/out/postgres_serve.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).parent))
from postgres import (
    CHUNK,
    catalog_entries,
    sample_queries,
    start_server,
    with_schema,
)
from toolscout.config.settings import default_cache_dir
from toolscout.embed.base import open_embedder
from toolscout.embed.cache import CachedEmbedder
from toolscout.search.text import ANALYZER_VERSION
from toolscout.store.base import IndexIdentity, Store
from toolscout.store.postgres import PostgresStore
from toolscout.store.sqlite import SQLiteStore

LUA = """
local paths = {%s}
local i = 0
request = function()
  i = i + 1
  return wrk.format("GET", paths[(i %% #paths) + 1])
end
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(port: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)  # polling a server that is still starting, bounded by the deadline
    raise RuntimeError(f"server on port {port} not healthy after {timeout} s")


def family_cpu_s(root: int) -> float:
    """CPU seconds (user + system) used so far by ``root`` and every process below it."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the process ended while we looked
        pid = int(stat.parent.name)
        parents[pid] = int(fields[1])
        ticks[pid] = int(fields[11]) + int(fields[12])
    family = {root}
    for _ in range(4):
        family |= {p for p, pp in parents.items() if pp in family}
    return sum(ticks.get(p, 0) for p in family) / os.sysconf("SC_CLK_TCK")


def postmaster(workdir: Path) -> int | None:
    """The embedded PostgreSQL server's process id (first line of its pid file)."""
    pid_file = workdir / "pgdata" / "postmaster.pid"
    return int(pid_file.read_text().split()[0]) if pid_file.exists() else None


def drive(
    db: str, paths: list[str], args: argparse.Namespace, workdir: Path, pg_pid: int | None
) -> dict[str, str]:
    port = free_port()
    # The result cache is off: with it, every request after the warm-up would be a cache hit
    # and the figure would not touch the store.
    env = {
        **os.environ,
        "TOOLSCOUT_DB": db,
        "TOOLSCOUT_ENRICH": "none",
        "TOOLSCOUT_RESULT_CACHE_SIZE": "0",
    }
    cmd = ["toolscout", "serve", "--workers", "2", "--port", str(port), "--log-level", "warning"]
    server = subprocess.Popen(cmd, env=env)
    try:
        wait_healthy(port)
        script = workdir / "paths.lua"
        script.write_text(LUA % ",".join(json.dumps(p) for p in paths), encoding="utf-8")
        base = f"http://127.0.0.1:{port}"
        warm = ["wrk", "-t2", "-c8", f"-d{args.warmup_seconds}s", "-s", str(script), base]
        subprocess.run(warm, check=True, capture_output=True, timeout=120)
        run = ["wrk", "-t2", f"-c{args.connections}", f"-d{args.seconds}s", "--timeout", "10s"]
        cpu0 = family_cpu_s(server.pid), family_cpu_s(pg_pid) if pg_pid else 0.0
        out = subprocess.run(
            [*run, "--latency", "-s", str(script), base],
            check=True,
            capture_output=True,
            text=True,
            timeout=args.seconds + 120,
        ).stdout
        cpu = family_cpu_s(server.pid) - cpu0[0], (family_cpu_s(pg_pid) - cpu0[1]) if pg_pid else 0
    finally:
        server.terminate()
        server.wait(timeout=60)
    found = {
        "req_per_s": re.search(r"Requests/sec:\s+([\d.]+)", out),
        "p50": re.search(r"50%\s+(\S+)", out),
        "p99": re.search(r"99%\s+(\S+)", out),
        "errors": re.search(r"Non-2xx or 3xx responses: (\d+)", out),
    }
    answers = re.search(r"(\d+) requests in", out)
    served = max(1, int(answers.group(1)) if answers else 0)
    row = {k: (m.group(1) if m else "0") for k, m in found.items()}
    row["server_cpu_ms_per_req"] = f"{1000 * cpu[0] / served:.2f}"
    row["postgres_cpu_ms_per_req"] = f"{1000 * cpu[1] / served:.2f}"
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--warmup-seconds", type=int, default=10, help="wrk run before timing")
    parser.add_argument("--out", type=Path, help="default: bench/out/postgres_serve.json")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="toolscout-bench-serve-"))
    pg_url = with_schema(start_server(workdir), "serve")
    embedder = CachedEmbedder(open_embedder(), Path(default_cache_dir()) / "vectors.sqlite")
    entries = catalog_entries(args.size, embedder)
    identity = IndexIdentity(embedder.name, embedder.dim, ANALYZER_VERSION)
    lite = f"sqlite:///{workdir}/serve.db"
    pg = PostgresStore(pg_url)
    stores: list[Store] = [SQLiteStore(lite), pg]
    for store in stores:
        store.bind(identity)
    with pg.bulk():
        for start in range(0, len(entries), CHUNK):
            for store in stores:
                store.upsert(entries[start : start + CHUNK])
    for store in stores:
        store.close()
    paths = [f"/api/v1/search?limit=10&query={quote(q)}" for q in sample_queries(200)]
    results = {
        name: drive(db, paths, args, workdir, postmaster(workdir) if name == "postgres" else None)
        for name, db in (("sqlite", lite), ("postgres", pg_url))
    }
    out = args.out or Path(__file__).parent / "out" / "postgres_serve.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    report = {"args": vars(args), "results": results}
    out.write_text(json.dumps(report, indent=2, default=str), "utf-8")
    print("| store | workers | connections | req/s | p50 | p99 | non-2xx | CPU ms/req: toolscout |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        cpu = r["server_cpu_ms_per_req"]
        if name == "postgres":
            cpu += f" (+ PostgreSQL {r['postgres_cpu_ms_per_req']})"
        cells = [name, "2", str(args.connections), r["req_per_s"], r["p50"], r["p99"], r["errors"]]
        print("| " + " | ".join([*cells, cpu]) + " |")
    for path in workdir.glob("*.db*"):  # the SQLite files are large; the server cleans up
        path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
