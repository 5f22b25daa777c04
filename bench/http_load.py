"""Load test of ``POST /api/v1/search`` on a real ``toolscout serve`` with wrk.

    python bench/http_load.py --db /tmp/bench10k.db [--duration 30] [--connections 1,32,128]
        [--query-set short|long] [--mix cycle|zipf]
        [--config "cold:workers=2,cache=0,results=0" --config "w2:workers=2,threads=4"]
        [--config "exact:workers=2,encoder=exact"]

For each server configuration (workers, event loop, search threads per worker, query-vector
cache size, result cache size) it starts ``toolscout serve`` on a free loopback port, waits for
/health, and runs wrk (2 threads) at each connection count.

Query sets: ``long`` = every distinct query of the shared sets (``toolbench_stable`` +
``seal_tools``: ~2,800 chatty multi-sentence requests); ``short`` = agent-style capability
requests: the project's 155 paraphrase queries plus the first sentence of each shared-set query
cut to at most 12 words (~2,900 distinct, 3-12 words; the length agents send, which is what
sets the cost). Mixes: ``cycle`` walks the distinct queries in order, each wrk thread from its
own offset (with the caches off, every request is a full search: the cold cost); ``zipf``
draws each request from a Zipf law over the distinct queries (exponent ``--zipf-s``, default
1.0: a few requests are very common, most are rare - how a fleet of agents repeats itself),
which is what the result and query-vector caches are for. Requests use the hierarchical search
defaults (``{"query": ...}``). A baseline is measured in the same run on the first configuration:
``GET /api/v1/tools/{id}`` (one tool read by primary key: the web layer plus the cheapest
engine call, i.e. the ceiling without search).

It reports per run: requests/s, latency p50/p95/p99 (wrk's histogram, ms), non-2xx and socket
errors, server RSS (all worker processes, MiB) after the run, and the query-vector cache's
hits/misses summed over workers (each worker keeps its own cache). Figures go to section 4 of
docs/BENCHMARKS.md with the exact command.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from shared_data import SHARED_BENCH

BENCH = SHARED_BENCH
PARAPHRASE = Path(__file__).resolve().parents[1] / "tests/data/livemcp_paraphrase/queries.jsonl"
SETS = ("toolbench_stable", "seal_tools")
TOOLSCOUT = str(Path(sys.executable).with_name("toolscout"))

LUA = r"""
local bodies = {}
%BODIES%
local counter = 0
local threads = {}
local zipf = %ZIPF%
local cdf = {}
if zipf > 0 then
  local total = 0
  for i = 1, #bodies do total = total + 1 / (i ^ zipf); cdf[i] = total end
  for i = 1, #bodies do cdf[i] = cdf[i] / total end
end
local function pick()
  local r = math.random()
  local lo, hi = 1, #cdf
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if cdf[mid] < r then lo = mid + 1 else hi = mid end
  end
  return lo
end
function setup(thread)
  thread:set("offset", #threads * math.floor(#bodies / 2))
  table.insert(threads, thread)
end
function init(args)
  -- args[1]: the run's own starting point, so one run does not replay the queries (and warm
  -- caches) of the run before it on the same server.
  counter = (tonumber(offset) or 0) + (tonumber(args[1]) or 0)
  math.randomseed(counter + 1)
  wrk.method = "%METHOD%"
  wrk.headers["Content-Type"] = "application/json"
end
function request()
  counter = counter + 1
  if "%METHOD%" == "GET" then return wrk.format(nil, "%PATH%") end
  if zipf > 0 then return wrk.format(nil, "%PATH%", nil, bodies[pick()]) end
  return wrk.format(nil, "%PATH%", nil, bodies[(counter %% #bodies) + 1])
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "RESULT {\"requests\": %d, \"duration_us\": %d, \"non2xx\": %d, \"connect\": %d, " ..
    "\"read\": %d, \"write\": %d, \"timeout\": %d, \"p50\": %d, \"p95\": %d, \"p99\": %d, " ..
    "\"mean\": %f}\n",
    summary.requests, summary.duration, e.status, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(95), latency:percentile(99), latency.mean))
end
"""


@dataclass(frozen=True)
class ServerConfig:
    label: str
    workers: int = 1
    loop: str = "auto"
    cache: int = 4096
    results: int = 1024
    threads: int = 0  # search threads per worker (0: the server's default, one per core)
    encoder: str = "int8"  # query encoder (int8: the default; exact: the packaged graph)


def parse_config(text: str) -> ServerConfig:
    label, _, spec = text.partition(":")
    fields: dict[str, Any] = {}
    for part in filter(None, spec.split(",")):
        key, _, value = part.partition("=")
        fields[key] = value if key in ("loop", "encoder") else int(value)
    return ServerConfig(label=label, **fields)


def load_queries(kind: str = "long") -> list[str]:
    """Distinct queries of the chosen set (see the module docstring), in a fixed order."""
    seen: dict[str, None] = {}
    if kind == "short":
        with PARAPHRASE.open(encoding="utf-8") as fh:
            for line in fh:
                seen.setdefault(json.loads(line)["query"].strip(), None)
    for name in SETS:
        with (BENCH / name / "queries.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                query = json.loads(line)["query"].strip()
                if kind == "short":
                    query = " ".join(_first_sentence(query).split()[:12]).rstrip(",;:")
                    if len(query.split()) < 3:
                        continue
                if query and len(query) <= 1000:
                    seen.setdefault(query, None)
    return list(seen)


def _first_sentence(text: str) -> str:
    match = re.search(r"[.?!](\s|$)", text)
    return text[: match.start()] if match else text


def lua_script(queries: list[str], method: str, path: str, zipf: float = 0.0) -> str:
    bodies = "\n".join(
        f"bodies[{i + 1}] = {json.dumps(json.dumps({'query': q}))}" for i, q in enumerate(queries)
    )
    return (
        LUA.replace("%BODIES%", bodies)
        .replace("%ZIPF%", repr(float(zipf)))
        .replace("%METHOD%", method)
        .replace("%PATH%", path)
        .replace("%%", "%")
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def healthy(proc: subprocess.Popen[bytes], port: int) -> subprocess.Popen[bytes]:
    """``proc`` once its server on ``port`` answers ``/health`` (180 s at most).

    Raises: RuntimeError when the server exits or stays unhealthy.
    """
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.5)  # polling a starting server; bounded by the deadline
    proc.kill()
    raise RuntimeError("server did not become healthy in 180 s")


def start_server(db: str, cfg: ServerConfig, port: int) -> subprocess.Popen[bytes]:
    env = dict(
        os.environ,
        TOOLSCOUT_QUERY_CACHE_SIZE=str(cfg.cache),
        TOOLSCOUT_RESULT_CACHE_SIZE=str(cfg.results),
        TOOLSCOUT_EMBED_THREADS="1",
        TOOLSCOUT_QUERY_ENCODER=cfg.encoder,
    )
    if cfg.threads:
        env["TOOLSCOUT_SEARCH_THREADS"] = str(cfg.threads)
    args = [TOOLSCOUT, "serve", "--db", db, "--port", str(port), "--workers", str(cfg.workers)]
    args += ["--loop", cfg.loop, "--log-level", "warning"]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return healthy(proc, port)


def _ticks(pid: int) -> int:
    """utime + stime of ``pid`` in clock ticks (0 when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # fields 14 and 15 of proc(5)


def _family(pid: int) -> list[tuple[int, int, float]]:
    """``(pid, rss KiB, cpu seconds)`` of ``pid`` and its descendants (uvicorn workers)."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid=,rss="], capture_output=True, text=True)
    rows = [tuple(int(x) for x in line.split()) for line in out.stdout.splitlines() if line.strip()]
    family = {pid}
    for _ in range(3):
        family |= {p for p, pp, _ in rows if pp in family}
    hz = os.sysconf("SC_CLK_TCK")
    return [(p, rss, _ticks(p) / hz) for p, _, rss in rows if p in family]


def rss_mib(pid: int) -> float:
    """Resident memory of the server and its workers, MiB."""
    return sum(rss for _, rss, _ in _family(pid)) / 1024


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) the server and its workers have used so far."""
    return sum(cpu for _, _, cpu in _family(pid))


def cache_stats(port: int, workers: int) -> dict[str, int]:
    """Sum the query caches of every worker (asks /health until each pid answered)."""
    seen: dict[int, dict[str, int]] = {}
    with httpx.Client(timeout=60) as http:
        for _ in range(200):
            try:
                # A new connection each time: the kernel spreads connections, not requests,
                # over the workers.
                body = http.get(
                    f"http://127.0.0.1:{port}/health", headers={"Connection": "close"}
                ).json()
            except httpx.HTTPError:
                continue  # a worker still draining the run's backlog; ask again
            seen[body["pid"]] = {
                "hits": (body.get("query_cache") or {}).get("hits", 0),
                "misses": (body.get("query_cache") or {}).get("misses", 0),
                "result_hits": (body.get("result_cache") or {}).get("hits", 0),
                "result_misses": (body.get("result_cache") or {}).get("misses", 0),
            }
            if len(seen) >= workers:
                break
    total = {"hits": 0, "misses": 0, "result_hits": 0, "result_misses": 0}
    for stats in seen.values():
        for key in total:
            total[key] += stats[key]
    total["workers_seen"] = len(seen)
    return total


def warm_caches(port: int, queries: list[str], workers: int) -> None:
    """Ask every query once per worker (fresh connections land on any worker, so ask
    ``workers`` times over; caches are per worker)."""
    with httpx.Client(timeout=120, headers={"Connection": "close"}) as http:
        for _ in range(workers):
            for query in queries:
                http.post(f"http://127.0.0.1:{port}/api/v1/search", json={"query": query})


def run_wrk(
    url: str, script: Path, connections: int, duration: int, start: int = 0
) -> dict[str, Any]:
    threads = min(2, connections)
    cmd = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--timeout", "10s"]
    cmd += ["-s", str(script), url, "--", str(start)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    match = re.search(r"RESULT (\{.*\})", out.stdout)
    if not match:
        raise RuntimeError(f"wrk failed: {out.stdout}\n{out.stderr}")
    raw = json.loads(match.group(1))
    seconds = raw["duration_us"] / 1e6
    errors = raw["non2xx"] + raw["connect"] + raw["read"] + raw["write"] + raw["timeout"]
    return {
        "connections": connections,
        "requests": raw["requests"],
        "rps": round(raw["requests"] / seconds, 1),
        "p50_ms": round(raw["p50"] / 1000, 1),
        "p95_ms": round(raw["p95"] / 1000, 1),
        "p99_ms": round(raw["p99"] / 1000, 1),
        "errors": errors,
    }


def bench_config(
    db: str,
    cfg: ServerConfig,
    scripts: dict[str, Path],
    conns: list[int],
    duration: int,
    baseline: bool,
    warm: list[str],
) -> list[dict[str, Any]]:
    port = free_port()
    proc = start_server(db, cfg, port)
    rows: list[dict[str, Any]] = []
    try:
        if warm:
            warm_caches(port, warm, cfg.workers)
        if baseline:
            first = httpx.get(f"http://127.0.0.1:{port}/api/v1/tools?limit=1", timeout=30)
            tool_id = first.json()["items"][0]["id"]
            path = f"/api/v1/tools/{quote(tool_id, safe=':')}"  # ids may hold spaces
            scripts["get"].write_text(lua_script([], "GET", path))
            row = run_wrk(f"http://127.0.0.1:{port}", scripts["get"], 32, duration)
            rows.append({"config": cfg.label, "route": "GET /api/v1/tools/{id}", **row})
            print(json.dumps(rows[-1]), flush=True)
        for n, c in enumerate(conns):
            before = cache_stats(port, cfg.workers)
            start = n * 997  # a prime stride: each run starts on queries not yet asked
            cpu0 = cpu_seconds(proc.pid)
            row = run_wrk(f"http://127.0.0.1:{port}", scripts["search"], c, duration, start)
            cpu = cpu_seconds(proc.pid) - cpu0
            after = cache_stats(port, cfg.workers)
            hits = after["hits"] - before["hits"]
            misses = after["misses"] - before["misses"]
            r_hits = after["result_hits"] - before["result_hits"]
            r_misses = after["result_misses"] - before["result_misses"]
            rows.append(
                {
                    "config": cfg.label,
                    "route": "POST /api/v1/search",
                    **row,
                    "result_hit_rate": round(r_hits / (r_hits + r_misses), 3)
                    if r_hits + r_misses
                    else None,
                    "cache_hit_rate": round(hits / (hits + misses), 3) if hits + misses else None,
                    # Load-independent cost: server CPU per answered request, and what two
                    # otherwise idle cores could sustain at that cost.
                    "cpu_ms_per_req": round(1000 * cpu / max(1, row["requests"]), 1),
                    "rps_at_2_idle_cores": round(2 * max(1, row["requests"]) / cpu, 1)
                    if cpu
                    else None,
                    "rss_mib": round(rss_mib(proc.pid), 1),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--db", required=True, help="An index built from bench/catalogs.py output.")
    ap.add_argument("--duration", type=int, default=30)
    ap.add_argument("--connections", default="1,32,128")
    ap.add_argument("--config", action="append", help="label:workers=N,cache=N,loop=uvloop")
    ap.add_argument("--out", type=Path, help="Write all rows as JSON here.")
    ap.add_argument("--queries", type=int, help="Use only the first N distinct queries.")
    ap.add_argument(
        "--warm", action="store_true", help="Ask every query once per worker before measuring."
    )
    ap.add_argument("--query-set", choices=("short", "long"), default="long")
    ap.add_argument("--mix", choices=("cycle", "zipf"), default="cycle")
    ap.add_argument("--zipf-s", type=float, default=1.0, help="Zipf exponent for --mix zipf.")
    args = ap.parse_args()
    configs = [parse_config(c) for c in (args.config or ["w1:workers=1,cache=4096"])]
    queries = load_queries(args.query_set)[: args.queries]
    conns = [int(c) for c in args.connections.split(",")]
    print(f"{len(queries)} distinct queries; configs {configs}", flush=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="toolscout-wrk-") as tmp:
        scripts = {
            "search": Path(tmp) / "search.lua",
            "get": Path(tmp) / "get.lua",
        }
        zipf = args.zipf_s if args.mix == "zipf" else 0.0
        scripts["search"].write_text(lua_script(queries, "POST", "/api/v1/search", zipf))
        for i, cfg in enumerate(configs):
            rows += bench_config(
                args.db,
                cfg,
                scripts,
                conns,
                args.duration,
                baseline=i == 0,
                warm=queries if args.warm else [],
            )
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
