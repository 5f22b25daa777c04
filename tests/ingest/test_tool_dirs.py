"""Python tool folders (freeact layout) read statically: docstrings, schemas, skip rules, junk."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolscout.errors import IngestError
from toolscout.ingest.pyfile import MAX_FILE_BYTES, ToolDirectory

CREATE_ISSUE = '''
from pydantic import BaseModel, Field


class Params(BaseModel):
    repo: str = Field(..., description="owner/name of the repository")
    title: str = Field(description="Issue title")
    labels: list[str] | None = None


def run(params: Params) -> str:
    """Create a GitHub issue in a repository.

    Returns the URL of the new issue. Labels must already exist.
    """
    raise SystemExit("importing or running this file is a bug in the reader")
'''


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_mcptools_and_gentools_become_tools_with_full_docstrings(tmp_path: Path) -> None:
    write(tmp_path / "mcptools/github/create_issue.py", CREATE_ISSUE)
    write(
        tmp_path / "gentools/files/zip_folder/api.py",
        'def run(path: str, level: int = 6, *, dry: bool):\n    """Zip a folder.\n\n'
        '    Writes <path>.zip next to it."""\n',
    )
    loaded = ToolDirectory(tmp_path).read()
    assert loaded.problems == []
    by_id = {t.id: t for t in loaded.tools}
    assert set(by_id) == {"mcptools:github:create_issue", "gentools:files:zip_folder"}
    issue = by_id["mcptools:github:create_issue"]
    assert issue.description == (
        "Create a GitHub issue in a repository.\n\n"
        "Returns the URL of the new issue. Labels must already exist."
    )
    assert issue.category == "github"
    assert issue.input_schema == {
        "type": "object",
        "title": "Params",
        "properties": {
            "repo": {
                "type": "string",
                "title": "Repo",
                "description": "owner/name of the repository",
            },
            "title": {"type": "string", "title": "Title", "description": "Issue title"},
            "labels": {
                "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                "default": None,
                "title": "Labels",
            },
        },
        "required": ["repo", "title"],
    }
    zipper = by_id["gentools:files:zip_folder"]
    assert zipper.description.endswith("Writes <path>.zip next to it.")
    assert zipper.input_schema == {
        "type": "object",
        "title": "zip_folder",
        "properties": {
            "path": {"type": "string", "title": "Path"},
            "level": {"type": "integer", "title": "Level", "default": 6},
            "dry": {"type": "boolean", "title": "Dry"},
        },
        "required": ["path", "dry"],
    }


def test_private_entries_are_skipped_silently_and_missing_run_or_docstring_reported(
    tmp_path: Path,
) -> None:
    write(tmp_path / "mcptools/github/create_issue.py", CREATE_ISSUE)
    write(tmp_path / "mcptools/github/_helpers.py", "def run():\n    'private'\n")
    write(tmp_path / "mcptools/_internal/tool.py", "def run():\n    'private category'\n")
    write(tmp_path / "mcptools/github/no_run.py", "def main():\n    'not a tool'\n")
    write(tmp_path / "mcptools/github/no_doc.py", "def run():\n    return 1\n")
    write(tmp_path / "mcptools/github/nested_run.py", "class A:\n    def run(self):\n        'x'\n")
    loaded = ToolDirectory(tmp_path).read()
    assert [t.id for t in loaded.tools] == ["mcptools:github:create_issue"]
    problems = {Path(p.location).name: p.field for p in loaded.problems}
    assert problems == {"nested_run.py": "run", "no_doc.py": "run.__doc__", "no_run.py": "run"}


def test_syntax_errors_binary_junk_nul_bytes_and_huge_files_are_reported_and_skipped(
    tmp_path: Path,
) -> None:
    base = tmp_path / "mcptools/misc"
    write(base / "good.py", 'def run():\n    """Say hello."""\n')
    write(base / "syntax.py", "def run(:\n    'oops'\n")
    write(base / "junk.py", bytes(range(256)) * 8)
    write(base / "nul.py", b'def run():\n    """x"""\n\x00\n')
    write(base / "huge.py", 'def run():\n    """Big."""\n' + "#" * (MAX_FILE_BYTES + 1))
    write(base / "deep.py", "x = " + "(" * 5000 + ")" * 5000 + '\ndef run():\n    """deep"""\n')
    loaded = ToolDirectory(tmp_path).read()
    assert [t.id for t in loaded.tools] == ["mcptools:misc:good"]
    reasons = {Path(p.location).name: (p.field, p.message) for p in loaded.problems}
    assert set(reasons) == {"syntax.py", "junk.py", "nul.py", "huge.py", "deep.py"}
    assert reasons["syntax.py"][0] == "(syntax)" and "line 1" in reasons["syntax.py"][1]
    assert "UTF-8" in reasons["junk.py"][1]
    assert "bytes" in reasons["huge.py"][1]


def test_a_gentools_package_without_an_entry_file_is_reported(tmp_path: Path) -> None:
    write(tmp_path / "gentools/data/empty_tool/helpers.py", "def run():\n    'x'\n")
    loaded = ToolDirectory(tmp_path).read()
    assert loaded.tools == []
    assert [p.field for p in loaded.problems] == ["(package)"]


def test_root_may_be_the_mcptools_folder_itself(tmp_path: Path) -> None:
    write(tmp_path / "mcptools/github/create_issue.py", CREATE_ISSUE)
    loaded = ToolDirectory(tmp_path / "mcptools").read()
    assert [t.id for t in loaded.tools] == ["mcptools:github:create_issue"]


def test_a_missing_folder_is_an_ingest_error(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="not a directory"):
        ToolDirectory(tmp_path / "nope").read()
