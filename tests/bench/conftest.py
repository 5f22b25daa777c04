"""Fixtures for the benchmark smoke test: a tiny copy of the shared evaluation data, a private
home for the scripts' caches, and a runner that starts a benchmark script with a bounded wait.

The tiny data keeps the shared sets' shape (every group and split keeps some requests, every kept
request keeps its gold tools) at a few dozen tools each, so a script that indexes a whole set
builds its index in seconds. ``shared_set`` finds the real data: it skips outside CI when the
data is absent, and fails in CI.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from support.bench_scripts import ROOT, Scripts
from support.shared_bench import shared_set

#: Requests kept per set: an even stride over the file, so every group and split keeps some.
TINY_QUERIES = 12
#: Tools kept per set: the kept requests' gold tools, then an even stride over the rest.
TINY_TOOLS = 60
#: The paraphrase requests written for the livemcpbench catalog (that set ships no requests).
PARAPHRASE = ROOT / "tests" / "data" / "livemcp_paraphrase" / "queries.jsonl"


def _rows(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _stride(rows: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    return rows[:: max(1, len(rows) // n)][:n]


def _write_rows(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    path.write_text(text, encoding="utf-8")


def shrink_set(source: Path, target: Path, requests: list[dict[str, Any]]) -> None:
    """Write ``target/tools.jsonl`` (gold tools of ``requests`` first in file order, then a
    stride of the others) and, when the set has requests, ``target/queries.jsonl``."""
    target.mkdir(parents=True)
    tools = _rows(source / "tools.jsonl")
    gold = {str(g) for row in requests for g in row.get("gold") or []}
    kept = {str(t["id"]) for t in tools if t["id"] in gold}
    for tool in _stride(tools, TINY_TOOLS):
        if len(kept) >= max(TINY_TOOLS, len(gold)):
            break
        kept.add(str(tool["id"]))
    _write_rows(target / "tools.jsonl", (t for t in tools if t["id"] in kept))
    if (source / "queries.jsonl").is_file():
        _write_rows(target / "queries.jsonl", requests)


@pytest.fixture(scope="session")
def tiny_bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder laid out like ``shared/bench`` with a few dozen tools per set."""
    folder = tmp_path_factory.mktemp("tiny-bench")
    for name in ("toolbench_stable", "seal_tools"):
        source = shared_set(name)
        shrink_set(source, folder / name, _stride(_rows(source / "queries.jsonl"), TINY_QUERIES))
    paraphrase = _stride(_rows(PARAPHRASE), TINY_QUERIES)
    shrink_set(shared_set("livemcpbench"), folder / "livemcpbench", paraphrase)
    return folder


@pytest.fixture(scope="session")
def bench_env(tiny_bench: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The scripts' environment: this checkout's package, the tiny data, and a private home and
    temporary folder, so caches (embedding vectors, the skills bench's indexes, tiktoken's file)
    start empty, as on a CI runner, are shared by the scripts of one session, and go with the
    session's temporary files."""
    home = tmp_path_factory.mktemp("bench-home")
    runtime = home / "runtime"
    runtime.mkdir(mode=0o700)
    scratch = home / "tmp"  # the scripts' own temporary folders (some keep theirs) end up here
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSCOUT_")}
    env.update(
        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT / "src"), env.get("PYTHONPATH")) if p),
        PATH=os.pathsep.join((str(Path(sys.executable).parent), env.get("PATH", ""))),
        SHARED_BENCH_DIR=str(tiny_bench),
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_RUNTIME_DIR=str(runtime),
        BENCH_DIR=str(home / "skills-bench"),
        TIKTOKEN_CACHE_DIR=str(home / "tiktoken"),
        TMPDIR=str(scratch),
    )
    return env


@pytest.fixture
def scripts(bench_env: dict[str, str], tmp_path: Path) -> Scripts:
    """Runs ``bench/<script>`` in this test's temporary folder (relative outputs land there)."""
    return Scripts(bench_env, tmp_path)


@pytest.fixture(scope="session")
def tiny_catalog(bench_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scale catalog of 250 tools from the tiny data (bench/catalogs.py, seed 0): every real
    tool of the three sets, then generated variants."""
    folder = tmp_path_factory.mktemp("tiny-catalog")
    path = folder / "catalog.jsonl"
    Scripts(bench_env, folder).run("catalogs.py", "--size", "250", "--out", str(path))
    return path


@pytest.fixture(scope="session")
def tiny_index(
    bench_env: dict[str, str], tiny_catalog: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """``tiny_catalog`` indexed with ``toolscout index`` (the real model)."""
    db = tmp_path_factory.mktemp("tiny-index") / "tiny.db"
    Scripts(bench_env, db.parent).command(
        [
            str(Path(sys.executable).with_name("toolscout")),
            "index",
            str(tiny_catalog),
            "--db",
            str(db),
        ]
    )
    return db
