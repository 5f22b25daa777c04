"""Shedding under overload: how fast ``toolscout serve`` answers searches it cannot take.

    PYTHONPATH=src python bench/shed_load.py --db /tmp/bench10k.db [--connections 300]
        [--duration 20] [--baseline-connections 2] [--server-cpus 0] [--client-cpus 1]
        [--query-set short|long] [--queries N] [--out bench/out/shed.json]

It starts ``toolscout serve`` (one worker, the default gate: one search slot per core, 64
waiting, a 5 s queue deadline) pinned to ``--server-cpus`` with ``taskset``, and runs the load
generator in a process of its own pinned to ``--client-cpus``: this script again, with
``--client``. The generator keeps ``--connections`` keep-alive connections busy, each sending
``POST /api/v1/search`` for the distinct queries in turn (the result and query-vector caches
are off, so every admitted search costs in full) and, as soon as an answer arrives, the next
one: that many searches are always in flight, and a refused search is sent again at once (the
worst case; a polite client waits ``Retry-After``).

Per run it reports the answered searches (200) and the refused ones (503) apart: count and
latency p50 / p95 / p99 / max (ms, from the request's first byte sent to its answer's last byte
read), refusals without ``Retry-After``, other statuses, and connections reset or closed under a
request. The baseline, in the same run on the same server: ``--baseline-connections`` (default
2, the server's search slots on 2 cores), where nothing waits or is refused. Figures go to
docs/RELIABILITY.md ("Shedding") with the command; take them on a quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from http_load import free_port, healthy, load_queries

TOOLSCOUT = str(Path(sys.executable).with_name("toolscout"))


def pinned(cpus: str) -> list[str]:
    """``taskset -c CPUS`` when it can be honoured here, else nothing (the run says so)."""
    if not cpus or shutil.which("taskset") is None:
        return []
    wanted = {int(c) for part in cpus.split(",") for c in _span(part)}
    return ["taskset", "-c", cpus] if wanted <= os.sched_getaffinity(0) else []


def _span(part: str) -> range:
    low, _, high = part.partition("-")
    return range(int(low), int(high or low) + 1)


def start_server(db: str, port: int, cpus: str) -> subprocess.Popen[bytes]:
    env = dict(
        os.environ,
        TOOLSCOUT_RESULT_CACHE_SIZE="0",
        TOOLSCOUT_QUERY_CACHE_SIZE="0",
        TOOLSCOUT_EMBED_THREADS="1",
    )
    args = [*pinned(cpus), TOOLSCOUT, "serve", "--db", db, "--port", str(port)]
    proc = subprocess.Popen([*args, "--log-level", "warning"], env=env, stdout=subprocess.DEVNULL)
    return healthy(proc, port)


# --- the load generator (run with --client, in its own process) ---------------------------


async def _exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[int, dict[str, str]]:
    """Send one request and read its answer whole; (status, lower-cased headers)."""
    writer.write(request)
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    await reader.readexactly(int(headers.get("content-length", "0")))
    return status, headers


async def _connection(
    port: int, bodies: list[bytes], start: int, stop_at: float, out: dict[str, Any]
) -> None:
    n = start
    conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    while time.monotonic() < stop_at:
        if conn is None:
            try:
                conn = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                out["connect_errors"] += 1
                await asyncio.sleep(0.05)
                continue
        body = bodies[n % len(bodies)]
        n += 1
        request = (
            b"POST /api/v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        sent = time.monotonic()
        try:
            status, headers = await _exchange(*conn, request)
        except ConnectionResetError:
            out["resets"] += 1
            conn = None
            continue
        except (asyncio.IncompleteReadError, BrokenPipeError, ConnectionError):
            out["closed_under_request"] += 1
            conn = None
            continue
        took = (time.monotonic() - sent) * 1000
        kind = {200: "answered", 503: "shed"}.get(status, "other")
        out[kind].append(took)
        if status == 503 and "retry-after" not in headers:
            out["shed_without_retry_after"] += 1
        if status not in (200, 503):
            out["other_statuses"][str(status)] = out["other_statuses"].get(str(status), 0) + 1
        if headers.get("connection", "").lower() == "close":
            conn[1].close()
            conn = None


def _percentiles(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"count": 0}
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)

    return {
        "count": len(ordered),
        "p50_ms": at(0.50),
        "p95_ms": at(0.95),
        "p99_ms": at(0.99),
        "max_ms": round(ordered[-1], 1),
    }


async def generate(
    port: int, connections: int, duration: float, queries: list[str]
) -> dict[str, Any]:
    """Keep ``connections`` searches in flight for ``duration`` seconds; the run's figures."""
    bodies = [json.dumps({"query": q}).encode() for q in queries]
    out: dict[str, Any] = {
        "answered": [],
        "shed": [],
        "other": [],
        "shed_without_retry_after": 0,
        "other_statuses": {},
        "resets": 0,
        "closed_under_request": 0,
        "connect_errors": 0,
    }
    stop_at = time.monotonic() + duration
    stride = max(1, len(bodies) // max(1, connections))
    await asyncio.gather(
        *(_connection(port, bodies, i * stride, stop_at, out) for i in range(connections))
    )
    return {
        "connections": connections,
        "answered": _percentiles(out.pop("answered")),
        "shed": _percentiles(out.pop("shed")),
        "other": len(out.pop("other")),
        **out,
    }


def run_client(args: argparse.Namespace) -> None:
    queries = json.loads(Path(args.queries_file).read_text(encoding="utf-8"))
    result = asyncio.run(generate(args.client, args.connections, args.duration, queries))
    print("RESULT " + json.dumps(result), flush=True)


def client_run(
    port: int, connections: int, duration: float, queries_file: Path, cpus: str
) -> dict[str, Any]:
    """Run the load generator in a process of its own; its figures."""
    cmd = [*pinned(cpus), sys.executable, __file__, "--client", str(port)]
    cmd += ["--connections", str(connections), "--duration", str(duration)]
    cmd += ["--queries-file", str(queries_file)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 300)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            result: dict[str, Any] = json.loads(line[7:])
            return result
    raise RuntimeError(f"the load generator failed: {done.stdout}\n{done.stderr}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--db", help="An index built from bench/catalogs.py output.")
    ap.add_argument("--connections", type=int, default=300)
    ap.add_argument("--baseline-connections", type=int, default=2)
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--server-cpus", default="0", help="taskset CPU list for the server")
    ap.add_argument("--client-cpus", default="1", help="taskset CPU list for the load generator")
    ap.add_argument("--query-set", choices=("short", "long"), default="short")
    ap.add_argument("--queries", type=int, help="Use only the first N distinct queries.")
    ap.add_argument("--out", type=Path, help="Write the runs as JSON here.")
    ap.add_argument("--client", type=int, help=argparse.SUPPRESS)  # the generator: server port
    ap.add_argument("--queries-file", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.client is not None:
        run_client(args)
        return
    if not args.db:
        ap.error("--db is required")
    queries = load_queries(args.query_set)[: args.queries]
    pins = {"server": pinned(args.server_cpus), "client": pinned(args.client_cpus)}
    print(
        f"{len(queries)} distinct queries; server on CPUs "
        f"{args.server_cpus if pins['server'] else 'any'}, load generator on CPUs "
        f"{args.client_cpus if pins['client'] else 'any'}",
        flush=True,
    )
    port = free_port()
    proc = start_server(args.db, port, args.server_cpus)
    rows: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="toolscout-shed-") as tmp:
            queries_file = Path(tmp) / "queries.json"
            queries_file.write_text(json.dumps(queries), encoding="utf-8")
            plan = [("baseline", args.baseline_connections), ("overload", args.connections)]
            for label, connections in plan:
                row = client_run(port, connections, args.duration, queries_file, args.client_cpus)
                rows.append({"run": label, **row})
                print(json.dumps(rows[-1]), flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
