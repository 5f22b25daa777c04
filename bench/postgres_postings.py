"""Reading whole posting lists from PostgreSQL: packed bytea per term vs a binary COPY of rows.

    python bench/postgres_postings.py --workdir /tmp/hier [--size 100000] [--repeats 7]

Needs the catalog ``bench/postgres_hier.py --workdir DIR`` loaded into schema ``hier<size>``
of the embedded server kept in DIR. Times, per list size, what a PostgreSQL store process pays
the first time a query needs a term's postings (``PostingsCache.lists`` reading a list whole):

* ``packed``: the store's statement (``postgres_postings._READ``): one row per term, its
  postings packed server-side into one bytea, fetched in binary and viewed with numpy;
* ``copy`` (baseline): ``COPY (SELECT ...) TO STDOUT (FORMAT BINARY)`` of the rows, every
  row its own CopyData message joined on the client, then parsed with numpy (the store's
  way before this change).

Both produce the same arrays (checked). Reported: median ms of ``--repeats`` reads per term
(buffers warm after the first), for a few terms from the most to the least common, and for
all of them in one statement.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).parent))
from postgres_hier import start_server
from toolscout.store.postgres.lexical.postings import _READ, read_lists
from toolscout.store.postgres.lexical.terms import TF_COLUMNS

_COPY = (
    "COPY (SELECT array_position(%s::text[], p.term)::int4, p.doc, p.doc_len, "
    + ", ".join(f"p.{c}" for c in TF_COLUMNS)
    + " FROM postings p WHERE p.term = ANY(%s::text[]) ORDER BY 1, 2) TO STDOUT (FORMAT BINARY)"
)
_ROW = np.dtype(
    [("n", ">i2"), ("lk", ">i4"), ("k", ">i4"), ("ld", ">i4"), ("doc", ">i8")]
    + [("ll", ">i4"), ("len", ">i4")]
    + [p for i in range(len(TF_COLUMNS)) for p in ((f"lt{i}", ">i4"), (f"t{i}", ">i2"))]
)

Arrays = tuple[np.ndarray, np.ndarray, np.ndarray]


def read_copy(conn: psycopg.Connection, terms: list[str]) -> list[Arrays]:
    with conn.cursor().copy(_COPY, (terms, terms)) as copy:
        data = b"".join(bytes(chunk) for chunk in copy)
    start = 19 + int.from_bytes(data[15:19], "big")
    rows = np.frombuffer(data[start:-2], dtype=_ROW)
    tf = np.stack([rows[f"t{i}"] for i in range(len(TF_COLUMNS))], axis=1).astype(np.int16)
    bounds = np.searchsorted(rows["k"].astype(np.int64), np.arange(1, len(terms) + 2))
    return [
        (
            rows["doc"][lo:hi].astype(np.int64),
            rows["len"][lo:hi].astype(np.int32),
            tf[lo:hi],
        )
        for lo, hi in itertools.pairwise(bounds)
    ]


def read_packed(conn: psycopg.Connection, terms: list[str]) -> list[Arrays]:
    return read_lists(conn, _READ, (terms, terms), len(terms))  # type: ignore[arg-type]


def same(a: list[Arrays], b: list[Arrays]) -> bool:
    for (d1, l1, t1), (d2, l2, t2) in zip(a, b, strict=True):
        o1, o2 = np.argsort(d1), np.argsort(d2)  # packed lists come in no particular order
        if not (
            np.array_equal(d1[o1], d2[o2])
            and np.array_equal(l1[o1], l2[o2])
            and np.array_equal(t1[o1], t2[o2])
        ):
            return False
    return True


def median_ms(fn: object, conn: psycopg.Connection, terms: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(conn, terms)  # type: ignore[operator]
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    server, url = start_server(args.workdir, keep=True)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"SET search_path TO hier{args.size}")
            ranked = conn.execute("SELECT term, df FROM term_stats ORDER BY df DESC").fetchall()
            if not ranked:
                raise SystemExit(f"schema hier{args.size} is empty: run bench/postgres_hier.py")
            picks = [ranked[int(q * (len(ranked) - 1))] for q in (0, 0.0005, 0.002, 0.01, 0.05)]
            rows = []
            for term, df in picks:
                one = [str(term)]
                assert same(read_copy(conn, one), read_packed(conn, one))
                copy = median_ms(read_copy, conn, one, args.repeats)
                packed = median_ms(read_packed, conn, one, args.repeats)
                rows.append({"term": term, "postings": df, "copy_ms": copy, "packed_ms": packed})
            terms = [str(t) for t, _ in ranked[:40:4]]
            assert same(read_copy(conn, terms), read_packed(conn, terms))
            rows.append(
                {
                    "term": "10 common terms in one statement",
                    "postings": sum(int(df) for _, df in ranked[:40:4]),
                    "copy_ms": median_ms(read_copy, conn, terms, args.repeats),
                    "packed_ms": median_ms(read_packed, conn, terms, args.repeats),
                }
            )
    finally:
        server.cleanup()
    for r in rows:
        r["speedup"] = round(r["copy_ms"] / r["packed_ms"], 2) if r["packed_ms"] else None
    print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
