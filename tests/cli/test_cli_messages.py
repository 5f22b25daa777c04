"""What the CLI prints is text, never markup: paths, tool names and descriptions with square
brackets come out as written; an unusable catalog file makes ``index`` exit 5 like ``sync``."""

import json
import os
import subprocess
import sys
from pathlib import Path

TOOLS = [
    {"name": "tag_release", "description": "Tag a release as [/] or [bold]final[/bold]."},
    {"name": "get_forecast", "description": "Weather forecast for a city."},
]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolscout", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
        check=False,
    )


def test_an_unusable_catalog_file_is_reported_and_index_exits_5(tmp_path: Path) -> None:
    odd = tmp_path / "x[" / "]broken.json"  # a path holding "[/]"
    odd.parent.mkdir()
    odd.write_text('{"tools": [', encoding="utf-8")
    good = tmp_path / "good.json"
    good.write_text(json.dumps(TOOLS), encoding="utf-8")
    db = str(tmp_path / "m.db")
    result = _run("index", str(good), str(odd), "--db", db, "--json")
    assert result.returncode == 5, result.stderr
    assert "Traceback" not in result.stderr
    assert str(odd) in "".join(result.stderr.split("\n"))
    assert json.loads(result.stdout)["added"] == 2  # the readable file was indexed


def test_errors_naming_a_path_with_brackets_print_it_as_written(tmp_path: Path) -> None:
    missing = tmp_path / "a[" / "]missing.json"
    result = _run("index", str(missing), "--db", str(tmp_path / "m.db"))
    assert result.returncode == 5, result.stderr
    assert "Traceback" not in result.stderr
    # The message wraps at the terminal's width wherever the temporary path's length puts the
    # breaks: inside the path (which has no spaces) or between words.
    assert str(missing) in "".join(result.stderr.split("\n"))
    assert "no such file" in " ".join(result.stderr.split())


def test_tables_print_descriptions_with_brackets_as_written(tmp_path: Path) -> None:
    catalog = tmp_path / "c.json"
    catalog.write_text(json.dumps(TOOLS), encoding="utf-8")
    db = str(tmp_path / "m.db")
    assert _run("index", str(catalog), "--db", db).returncode == 0
    found = _run("search", "tag a [/] release", "--db", db, "--limit", "1")
    assert found.returncode == 0, found.stderr
    assert "[bold]final" in found.stdout.replace("\n", "")
    info = _run("info", "--db", db)
    assert info.returncode == 0 and "Traceback" not in info.stderr
