"""Store statements per search: what one search asks of its store, counted, not timed.

    PYTHONPATH=src python bench/search_cost.py [--stores sqlite postgres] [--queries 20]

Indexes the built-in starter catalog (129 tools, 40 skills) into a SQLite file and into an
embedded PostgreSQL, then runs ``--queries`` distinct short requests per strategy (``direct``,
``hierarchical``, ``hybrid``) through ``Engine.find`` and through REST (``POST
/api/v1/search`` on the app ``toolscout serve`` runs, in process), after a warm-up pass of
other requests, with the default settings (result cache, feedback memory and offline
enrichment on). Every request is new to the result cache, so each one is a full search.

It counts the statements the store sends, deterministically: on SQLite every statement the
connection runs (its trace callback), on PostgreSQL every ``execute`` and every transaction's
BEGIN and COMMIT, each a round trip to the server. Figures are means per search with their
range; ``--by-statement`` lists the statements of one search. Beside them it reports the
process's CPU time per search (all its threads): a timing, so read it only from a quiet
machine, and the statement counts from any. Only the public API is used, so the same script
measures any commit of the project (the before / after figures in docs/BENCHMARKS.md were
taken by running it on both).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from toolscout import Engine
from toolscout.config import Settings
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.models import SearchRequest

#: Short agent requests; the first ``WARMUP`` warm the caches, the rest are counted.
REQUESTS = [
    "send an email to a colleague", "create a github issue", "read a file from disk",
    "search the web for news", "get the current weather", "translate text to french",
    "list open pull requests", "query a postgres database", "schedule a meeting tomorrow",
    "post a message to slack", "convert currency rates", "take a screenshot of a page",
    "summarize a pdf document", "find restaurants nearby", "upload a file to s3",
    "run a shell command", "look up a stock price", "create a calendar event",
    "fetch a url and return its text", "commit changes to git", "resize an image",
    "check disk usage", "get directions between two places", "search jira tickets",
    "write rows to a spreadsheet", "list files in a folder", "add a todo item",
    "get today's date and time", "play a song", "book a flight to paris",
    "store a note in memory", "search arxiv papers", "delete an old branch",
    "send a text message", "monitor a website's uptime", "generate a random password",
]  # fmt: skip
WARMUP = 6


class Tally:
    """Statements sent, by text, while ``on``."""

    def __init__(self) -> None:
        self.on = False
        self.seen: Counter[str] = Counter()

    def add(self, sql: object) -> None:
        text = sql.decode() if isinstance(sql, bytes) else str(sql)
        # SQLite reports the statements FTS5 runs inside a query too, as "-- ...": not sent.
        if self.on and not text.startswith("--"):
            self.seen[" ".join(text.split())[:90]] += 1

    @contextmanager
    def counting(self) -> Iterator[Counter[str]]:
        self.seen = Counter()
        self.on = True
        try:
            yield self.seen
        finally:
            self.on = False


def watch_sqlite(tally: Tally) -> None:
    """Every connection opened from now on reports each statement it runs (the store's SQLite
    is ``sqlean``'s build)."""
    import sqlean

    connect = sqlean.connect

    def traced(*args: Any, **kwargs: Any) -> Any:
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(tally.add)
        return conn

    sqlean.connect = traced


def watch_postgres(tally: Tally) -> None:
    """Every ``execute`` and every transaction's BEGIN / COMMIT of psycopg (a round trip each;
    the store's pool runs in autocommit, so a plain read is one)."""
    import psycopg

    def wrap(cls: Any, name: str, label: Callable[..., object]) -> None:
        original = getattr(cls, name)

        def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
            tally.add(label(*args))
            return original(self, *args, **kwargs)

        setattr(cls, name, counted)

    wrap(psycopg.Cursor, "execute", lambda q, *a: q)
    wrap(psycopg.Cursor, "executemany", lambda q, *a: f"{q} (many)")
    wrap(psycopg.Transaction, "__enter__", lambda *a: "BEGIN")
    wrap(psycopg.Transaction, "__exit__", lambda *a: "COMMIT")


def catalog() -> Any:
    path = Path(str(resources.files("toolscout.data").joinpath("starter_catalog.json")))
    return CatalogFile(path, source="builtin").read()


def body(query: str, strategy: str) -> dict[str, Any]:
    return {"query": query, "strategy": strategy, "limit": 5}


def answer(response: Any) -> object:
    if response.status_code != 200:
        raise SystemExit(f"search failed: {response.status_code} {response.text[:300]}")
    return response.json()


def run_store(name: str, url: str, tally: Tally, queries: int, detail: bool) -> dict[str, Any]:
    from fastapi.testclient import TestClient

    from toolscout.api.http import create_app

    settings = Settings(db=url)
    engine = Engine.open(settings)
    engine.index([catalog()])
    # A loopback client, as a local agent is (the guard refuses other hosts and callers).
    client = TestClient(
        create_app(engine, settings), base_url="http://127.0.0.1", client=("127.0.0.1", 50000)
    )
    counted = REQUESTS[WARMUP : WARMUP + queries]
    out: dict[str, Any] = {}
    with client:
        doors: dict[str, Callable[[str, str], object]] = {
            "Engine.find": lambda q, s: engine.find(SearchRequest(q, strategy=s, limit=5)),
            "REST POST": lambda q, s: answer(client.post("/api/v1/search", json=body(q, s))),
        }
        for strategy in ("direct", "hierarchical", "hybrid"):
            for door, search in doors.items():
                for q in REQUESTS[:WARMUP]:  # warm every per-process cache of this door
                    search(f"{q} ({door})", strategy)
                per: list[int] = []
                one: Counter[str] = Counter()
                cpu = time.process_time()
                for q in counted:
                    with tally.counting() as seen:
                        search(f"{q} ({door}, {strategy})", strategy)
                    per.append(sum(seen.values()))
                    one = one or Counter(seen)
                cpu_ms = (time.process_time() - cpu) * 1000 / len(counted)
                row = {"mean": sum(per) / len(per), "min": min(per), "max": max(per)}
                row["cpu_ms"] = round(cpu_ms, 2)
                if detail:
                    row["statements"] = dict(one.most_common())
                out[f"{strategy} via {door}"] = row
    engine.close()
    return {"store": name, "searches": out}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgres"])
    parser.add_argument("--queries", type=int, default=20, help=f"at most {len(REQUESTS) - 6}")
    parser.add_argument("--by-statement", action="store_true", help="list one search's statements")
    parser.add_argument("--out", type=Path, help="default: bench/out/search_cost.json")
    args = parser.parse_args()
    queries = max(1, min(args.queries, len(REQUESTS) - WARMUP))
    tally = Tally()
    workdir = Path(tempfile.mkdtemp(prefix="toolscout-bench-cost-"))
    results = []
    if "sqlite" in args.stores:
        watch_sqlite(tally)
        url = f"sqlite:///{workdir}/cost.db"
        results.append(run_store("sqlite", url, tally, queries, args.by_statement))
    if "postgres" in args.stores:
        from postgres import start_server, with_schema

        watch_postgres(tally)
        url = with_schema(start_server(workdir), "cost")
        results.append(run_store("postgres", url, tally, queries, args.by_statement))
    out = args.out or Path(__file__).parent / "out" / "search_cost.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"queries": queries, "results": results}, indent=2), "utf-8")
    print("| store | search | statements per search, mean (min-max) | CPU ms per search |")
    print("|---|---|---|---|")
    for r in results:
        for search, row in r["searches"].items():
            counts = f"{row['mean']:.1f} ({row['min']}-{row['max']})"
            print(f"| {r['store']} | {search} | {counts} | {row['cpu_ms']} |")
            for sql, n in row.get("statements", {}).items():
                print(f"|  |  | {n} x `{sql}` |  |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
