"""SQLite FTS5's ``bm25()`` recomputed in PostgreSQL, so both stores rank lexical hits the same.

Why not ``tsvector``/``ts_rank``: ``ts_rank`` is not BM25, and ``setweight`` has four weight
classes for our eight fields, so no choice of weights makes PostgreSQL's ranking match the
embedded store's. Instead every tool's analysed fields are kept as rows of ``postings``
(term, the tool's integer ``doc`` key, token count, one term-frequency column per field) and
one SQL statement evaluates FTS5's formula over them, operation by operation in the same order
as ``fts5_aux.c`` (the formula and its constants: :mod:`.bm25`). The btree
on ``(term, doc)`` finds the candidates, which is what a GIN index on a ``tsvector`` would do.
Statements group and join on ``doc`` (an integer is far cheaper to hash than a text id) and
turn docs into tool ids only for the few tools they return.

One quirk is reproduced on purpose: the SQLite store's FTS5 table is ``contentless_delete=1``,
and for such tables FTS5 never decrements its row and token totals, so ``N`` and ``avgdl``
count every row ever inserted (an update is a delete plus an insert; ``reset`` keeps them).
``lexical_stats`` keeps the same running totals. Multi-token phrases are the one deviation:
a query token that FTS5 would split into several tokens (never the analyser's output) is
matched here as separate terms, not as a phrase.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolscout.store.postgres.conn import Conn
from toolscout.store.postgres.lexical.bm25 import (
    K1,
    field_sum_sql,
    idf,
    idf_floor_sql,
    term_score_sql,
)


def forget_postings(conn: Conn, tool_ids: Sequence[str]) -> None:
    """Delete the tools' postings and take them out of ``term_stats`` (in the caller's
    transaction, before the tools themselves go, so document frequencies always equal the
    postings they count)."""
    conn.execute(
        "WITH gone AS (DELETE FROM postings WHERE doc IN "
        "(SELECT doc FROM tools WHERE id = ANY(%s)) RETURNING term), "
        "g AS (SELECT term, count(*) AS n FROM gone GROUP BY term) "
        "UPDATE term_stats s SET df = s.df - g.n, version = (SELECT version FROM lexical_stats) "
        "FROM g WHERE s.term = g.term",
        (list(tool_ids),),
    )


def add_postings(conn: Conn, df: Mapping[str, int]) -> None:
    """Count newly written postings (``{term: tools}``) into ``term_stats``. Both this and
    ``forget_postings`` stamp the terms with the write's version (see .postings)."""
    if df:
        conn.execute(
            "INSERT INTO term_stats(term, df, version) "
            "SELECT u.*, (SELECT version FROM lexical_stats) FROM unnest(%s::text[], %s::int[]) u "
            "ON CONFLICT (term) DO UPDATE SET df = term_stats.df + EXCLUDED.df, "
            "version = EXCLUDED.version",
            (list(df), list(df.values())),
        )


#: Slack for rounding when a bound decides what may be skipped (scores are ~1-50).
_SLACK = 1e-9
#: MaxScore's first pass scans the rarest terms until their postings number this many
#: times the limit: enough tools to find a high K-th score (bench/postgres_hier.py).
FIRST_COVER = 10
#: Above this many distinct terms (long, chatty requests) BM25 runs unpruned: measured at
#: 100k tools, pruning such queries cost more than it saved (docs/BENCHMARKS.md section 7).
PRUNE_MAX_TERMS = 12


def essential_terms(
    terms: Sequence[str],
    df: Mapping[str, int],
    rows: int,
    *,
    limit: int,
    theta: float | None,
    cover: int = 1,
) -> set[str]:
    """The terms whose postings are scanned in full (MaxScore); the others are looked up only
    for tools that contain an essential term.

    A tool containing none of the essential terms scores at most the sum of the others'
    bounds, ``idf * (k1 + 1)`` each (per occurrence in the query). With ``theta`` (a score
    that ``limit`` tools are known to reach) the common terms are left out for as long as
    their bounds stay below it, so no skipped tool can enter the top ``limit``. Without it
    (first pass) the rarest terms are taken until their postings could fill the limit, then
    while they stay short, up to ``cover`` times the limit; the caller checks that guess
    against the scores it gets (``top_is_exact``).
    """
    present = sorted({t for t in terms if df.get(t, 0) > 0}, key=lambda t: (df[t], t))
    if theta is None:
        chosen: set[str] = set()
        covered = 0
        for term in present:
            # Enough postings to fill the limit; then more only while they stay cheap.
            if covered >= limit and (covered >= limit * cover or df[term] > limit * cover):
                break
            chosen.add(term)
            covered += df[term]
        return chosen
    skipped: set[str] = set()
    bound = 0.0
    for term in reversed(present):  # most common first
        extra = terms.count(term) * idf(df[term], rows) * (K1 + 1)
        if (bound + extra) * (1 + _SLACK) + _SLACK >= theta:
            break
        bound += extra
        skipped.add(term)
    return set(present) - skipped


def rest_bound(
    terms: Sequence[str], df: Mapping[str, int], rows: int, essential: set[str]
) -> float:
    """The most the non-essential terms can add to any tool's score, rounding slack
    included."""
    bound = sum(
        idf(df[t], rows) * (K1 + 1) for t in terms if df.get(t, 0) > 0 and t not in essential
    )
    return bound * (1 + _SLACK) + _SLACK if bound else 0.0


def top_is_exact(
    terms: Sequence[str],
    df: Mapping[str, int],
    rows: int,
    essential: set[str],
    scores: Sequence[float],
    limit: int,
) -> bool:
    """True when no tool outside the scored candidates can reach the ``limit``-th score."""
    rest = [t for t in terms if df.get(t, 0) > 0 and t not in essential]
    if not rest:
        return True
    if len(scores) < limit:
        return False
    return rest_bound(terms, df, rows, essential) < scores[limit - 1]


def bm25_topk_sql(weights: Sequence[float], filter_sql: str | None) -> str:
    """The pruned scoring statement (MaxScore): exact BM25 for every tool holding an essential
    term, every query term counted. Parameters: the query terms (text[]), their document
    frequencies (bigint[]), whether each is essential (boolean[]), the filter's parameters
    when ``filter_sql`` is given, a score the limit-th tool is known to reach (0 if none),
    the limit, the bound of the non-essential terms' sum (slack included), the limit twice.

    Each term's contribution is the same expression as in ``bm25_sql``. Tools are first
    ranked by a plain (hashed, unordered) sum; only those within rounding of the limit-th
    such sum get the exact sum in query order that FTS5 computes (a float sum's order changes
    its last bits, never by 1e-9 of it), so a tool gets the very same float as in ``bm25_sql``
    without sorting every posting.
    """
    f_expr = field_sum_sql(weights)
    where = ""
    if filter_sql:
        where = f"AND h.doc IN (SELECT t.doc FROM tools t WHERE {filter_sql})"
    contribution = f"q.idf * {term_score_sql(f_expr, 'h.doc_len')}"
    return f"""
        WITH q AS MATERIALIZED (
            SELECT u.term, u.ord, u.essential, {idf_floor_sql("x.v")} AS idf
            FROM unnest(%s::text[], %s::bigint[], %s::boolean[])
                WITH ORDINALITY AS u(term, df, essential, ord)
            CROSS JOIN LATERAL (
                SELECT ln((((SELECT rows_indexed FROM lexical_stats) - u.df)::float8 + 0.5::float8)
                          / (u.df::float8 + 0.5::float8)) AS v
            ) x
            WHERE u.df > 0
        ),
        ess AS MATERIALIZED (
            SELECT q.ord, h.doc, {contribution} AS v
            FROM q JOIN postings h ON h.term = q.term
            WHERE q.essential {where}
        ),
        part AS MATERIALIZED (SELECT e.doc, sum(e.v) AS p FROM ess e GROUP BY e.doc),
        -- A tool's essential terms alone give it at least its partial score, so the limit-th
        -- partial score is a floor for the limit-th full one (as is a floor found before).
        floor AS (
            SELECT greatest(%s::float8, coalesce((
                SELECT p.p FROM part p ORDER BY p.p DESC LIMIT 1 OFFSET %s - 1), 0::float8)) AS v
        ),
        -- Tools that cannot reach the floor even with every other term at its bound are
        -- never looked up again.
        live AS MATERIALIZED (
            SELECT p.doc FROM part p
            WHERE p.p + %s::float8 >= (SELECT v FROM floor)
        ),
        c AS (
            SELECT e.* FROM ess e JOIN live l ON l.doc = e.doc
            UNION ALL
            SELECT q.ord, h.doc, {contribution} AS v
            FROM q JOIN postings h ON h.term = q.term
            -- the index sorts the array itself
            WHERE NOT q.essential
              AND h.doc = ANY((SELECT array_agg(l.doc) FROM live l)::bigint[])
        ),
        agg AS MATERIALIZED (
            SELECT c.doc, sum(c.v) AS rough, array_agg(c.v) AS vs, array_agg(c.ord) AS os
            FROM c GROUP BY c.doc
        ),
        cut AS (SELECT a.rough FROM agg a ORDER BY a.rough DESC LIMIT 1 OFFSET %s - 1),
        keep AS (
            SELECT a.doc, a.vs, a.os FROM agg a
            WHERE a.rough >= coalesce((SELECT rough FROM cut), 0::float8) * (1 - 1e-9) - 1e-12
        )
        SELECT t.id,
               (SELECT sum(x.v ORDER BY x.o) FROM unnest(k.vs, k.os) AS x(v, o)) AS score
        FROM keep k JOIN tools t ON t.doc = k.doc
        ORDER BY score DESC, t.id
        LIMIT %s
    """


def bm25_sql(weights: Sequence[float], filter_sql: str | None) -> str:
    """The scoring statement. Parameters: the query terms (text[]), the filter's parameters
    when ``filter_sql`` is given (a condition on tools ``t``), the limit twice.

    Weights are inlined as float8 literals (they are floats, checked by the caller); the
    field sum runs in column order like FTS5's per-instance accumulation.
    """
    f_expr = field_sum_sql(weights)
    where = ""
    if filter_sql:
        where = f"WHERE hits.doc IN (SELECT t.doc FROM tools t WHERE {filter_sql})"
    return f"""
        WITH q AS (
            SELECT term, ord FROM unnest(%s::text[]) WITH ORDINALITY AS q(term, ord)
        ),
        hits AS MATERIALIZED (
            SELECT q.ord, h.doc, h.doc_len, ({f_expr}) AS f
            FROM q JOIN postings h ON h.term = q.term
        ),
        idf AS (
            SELECT d.ord, {idf_floor_sql("x.v")} AS idf
            FROM (SELECT ord, count(*) AS n FROM hits GROUP BY ord) d
            CROSS JOIN LATERAL (
                SELECT ln((((SELECT rows_indexed FROM lexical_stats) - d.n)::float8 + 0.5::float8)
                          / (d.n::float8 + 0.5::float8)) AS v
            ) x
        ),
        s AS MATERIALIZED (
            SELECT hits.doc,
                   sum(idf.idf * {term_score_sql("hits.f", "hits.doc_len")}
                       ORDER BY hits.ord) AS score
            FROM hits JOIN idf ON idf.ord = hits.ord
            {where}
            GROUP BY hits.doc
        ),
        -- ids only for the tools that can make the limit (ties at the cut included)
        cut AS (SELECT s.score FROM s ORDER BY s.score DESC LIMIT 1 OFFSET %s - 1)
        SELECT t.id, s.score FROM s JOIN tools t ON t.doc = s.doc
        WHERE s.score >= coalesce((SELECT score FROM cut), '-infinity'::float8)
        ORDER BY s.score DESC, t.id
        LIMIT %s
    """


def top_bm25(
    conn: Conn,
    terms: Sequence[str],
    weights: Sequence[float],
    filter_sql: str | None,
    params: Sequence[Any],
    limit: int,
) -> list[tuple[str, float]]:
    """The ``limit`` best tools by BM25, exactly as the exhaustive ``bm25_sql`` ranks them,
    reading only the postings MaxScore needs (at most two passes, see ``essential_terms``).

    Run inside one REPEATABLE READ transaction, so the document frequencies read first match
    the postings read after. Non-negative weights only (the bounds assume them).
    """
    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
    # The planner cannot estimate how many tools the postings hold and would sort them all
    # by id to group them; hashing is several times cheaper. Only this transaction.
    conn.execute("SET LOCAL enable_sort = off")
    found = conn.execute(
        "SELECT (SELECT rows_indexed FROM lexical_stats), term, df FROM term_stats "
        "WHERE term = ANY(%s) AND df > 0",
        (list(set(terms)),),
    ).fetchall()
    if not found:
        return []
    rows = int(found[0][0])
    df = {str(r[1]): int(r[2]) for r in found}
    statement = bm25_topk_sql(weights, filter_sql)
    dfs = [df.get(t, 0) for t in terms]

    def run(essential: set[str], known: float = 0.0) -> list[tuple[str, float]]:
        flags = [t in essential for t in terms]
        rest = rest_bound(terms, df, rows, essential)
        args = [list(terms), dfs, flags, *params, known, limit, rest, limit, limit]
        return [(str(r[0]), float(r[1])) for r in conn.execute(statement, args).fetchall()]

    essential = essential_terms(terms, df, rows, limit=limit, theta=None, cover=FIRST_COVER)
    top = run(essential)
    scores = [s for _, s in top]
    if top_is_exact(terms, df, rows, essential, scores, limit):
        return top
    # The first guess left out too much: the scores it found bound what the rest can reach.
    theta = scores[limit - 1] if len(scores) >= limit else None
    wider = set(df) if theta is None else essential_terms(terms, df, rows, limit=limit, theta=theta)
    wider |= essential
    if sum(df[t] for t in wider) * 2 > sum(df.values()):
        # Most postings are needed anyway: reading every term in full is cheaper than looking
        # terms up tool by tool (and cheaper than ``bm25_sql``, which sorts every posting).
        return run(set(df))
    top = run(wider, theta or 0.0)
    if not top_is_exact(terms, df, rows, wider, [s for _, s in top], limit):
        top = run(set(df))  # cannot happen (see essential_terms); exhaustive to be safe
    return top
