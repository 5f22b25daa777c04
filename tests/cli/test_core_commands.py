"""The CLI as a user runs it: the real `toolscout` entry point in a subprocess."""

import json
import os
import subprocess
import sys
from pathlib import Path

CATALOG = [
    {
        "name": "create_issue",
        "server": "github",
        "description": "Open a new issue in a repository.",
    },
    {"name": "get_forecast", "server": "weather", "description": "Weather forecast for a city."},
    {"name": "send_message", "server": "slack", "description": "Post a chat message to a channel."},
]


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolscout", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_index_search_info_round_trip(tmp_path: Path) -> None:
    catalog = tmp_path / "c.json"
    catalog.write_text(json.dumps(CATALOG), encoding="utf-8")
    db = str(tmp_path / "cli.db")
    indexed = _run("index", str(catalog), "--db", db, "--json")
    assert indexed.returncode == 0, indexed.stderr
    assert json.loads(indexed.stdout)["added"] == 3
    again = _run("index", str(catalog), "--db", db, "--json")
    assert json.loads(again.stdout)["unchanged"] == 3
    found = _run("search", "will it rain tomorrow", "--db", db, "--json", "--limit", "2")
    assert found.returncode == 0, found.stderr
    payload = json.loads(found.stdout)
    assert payload["tools"][0]["id"] == "weather::get_forecast"
    info = _run("info", "--json", env={"TOOLSCOUT_DB": db})
    assert json.loads(info.stdout)["tools"] == 3
    assert json.loads(info.stdout)["query_encoder"] == "int8"
    stock = {
        "TOOLSCOUT_DB": str(tmp_path / "stock.db"),
        "TOOLSCOUT_EMBED_MODEL": "local:minilm-l6-int8",
    }
    exact = _run("info", "--json", env={**stock, "TOOLSCOUT_QUERY_ENCODER": "exact"})
    assert json.loads(exact.stdout)["query_encoder"] == "exact"


def test_user_errors_print_a_message_and_exit_non_zero(tmp_path: Path) -> None:
    db = str(tmp_path / "e.db")
    empty = _run("search", "", "--db", db)
    assert empty.returncode == 2 and "query" in empty.stderr and "Traceback" not in empty.stderr
    missing = _run("index", str(tmp_path / "nope.json"), "--db", db)
    assert missing.returncode == 5 and "no such file" in missing.stderr
    bad_mode = _run("search", "x", "--mode", "fuzzy", "--db", db)
    assert bad_mode.returncode == 2 and "Traceback" not in bad_mode.stderr


def test_builtin_catalog_indexes_without_problems(tmp_path: Path) -> None:
    result = _run("index", "--builtin", "--db", str(tmp_path / "b.db"), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["added"] > 100 and report["skipped"] == []


def test_index_reports_its_rate_and_peak_memory(tmp_path: Path) -> None:
    result = _run("index", "--builtin", "--db", str(tmp_path / "r.db"))
    assert result.returncode == 0, result.stderr
    summary = next(line for line in result.stdout.splitlines() if line.startswith("embedded "))
    words = summary.replace("(", " ").replace(",", "").split()
    assert int(words[1]) > 100 and "tools/s);" in words and "MB" in words
    assert float(words[words.index("memory") + 1]) > 50  # the model alone is bigger


def test_eval_writes_a_run_file_and_reports_metrics(tmp_path: Path) -> None:
    set_dir = tmp_path / "mini"
    set_dir.mkdir()
    tools = [{"id": f"t{i}", **entry} for i, entry in enumerate(CATALOG)]
    (set_dir / "tools.jsonl").write_text("\n".join(json.dumps(t) for t in tools), encoding="utf-8")
    queries = [
        {"id": "q1", "query": "open a bug report", "gold": ["t0"], "group": "a"},
        {"id": "q2", "query": "rain tomorrow?", "gold": ["t1"], "group": "b"},
        {"id": "q3", "query": "nothing", "gold": []},
    ]
    (set_dir / "queries.jsonl").write_text(
        "\n".join(json.dumps(q) for q in queries), encoding="utf-8"
    )
    run_file = tmp_path / "run.jsonl"
    result = _run("eval", str(set_dir), "--json", "--run-file", str(run_file))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["queries"] == 2 and set(report["groups"]) == {"a", "b"}
    assert report["overall"]["hit@1"] == 1.0
    assert {"p50", "p95", "short_p95"} <= set(report["latency_ms"])
    lines = [json.loads(line) for line in run_file.read_text().splitlines()]
    assert [row["query_id"] for row in lines] == ["q1", "q2"]
    assert lines[0]["ranked"][0] == "t0"
    # The run also leaves a report file (for the web console) in the reports folder.
    written = json.loads(Path(report["report_file"]).read_text(encoding="utf-8"))
    assert Path(report["report_file"]).parent == Path(os.environ["TOOLSCOUT_REPORTS_DIR"])
    assert written["sets"][0]["overall"] == report["overall"]
    assert len(written["sets"][0]["latency_samples_ms"]) == 2
    # And how well the hits' scores are calibrated: both first hits were right.
    top1 = written["sets"][0]["calibration"]["top1"]
    assert sum(n for *_, n in top1["bins"]) == 2 and all(r == 1.0 for _, _, r, _ in top1["bins"])
    assert abs(top1["ece"] - (1 - sum(m * n for _, m, _, n in top1["bins"]) / 2)) < 1e-3
