"""Helpers for the web console tests: constants, the served console's handle, report writing
and screenshots (fixtures live in tests/console/conftest.py)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.eval.reports import report_payload, write_report
from toolscout.eval.run import evaluate
from toolscout.models import SearchMode

ADMIN = "console-admin-key"
ROOT = Path(__file__).resolve().parents[2]
#: Kept by CI for the run (gitignored); each browser test saves its pages here.
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
CHROMIUM_NAMES = ("chromium", "chromium-browser")
#: A few requests and their gold tools, written for these tests from the starter catalog.
QUERIES = [
    {"id": "q1", "query": "send an email to a colleague", "gold": ["gmail::send_email"],
     "group": "paraphrase"},
    {"id": "q2", "query": "open a new issue in a repository", "gold": ["github::create_issue"],
     "group": "paraphrase"},
    {"id": "q3", "query": "what will the weather be tomorrow", "gold": ["weather::forecast"],
     "group": "paraphrase"},
    {"id": "q4", "query": "create issue", "gold": ["github::create_issue"], "group": "keyword"},
    {"id": "q5", "query": "send email", "gold": ["gmail::send_email"], "group": "keyword"},
]  # fmt: skip


def chromium_path() -> str | None:
    """Debian's Chromium binary, or None when it is not installed."""
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass
class Served:
    """A running console: its URL, the engine behind it, and its settings."""

    url: str
    engine: Engine
    settings: Settings


def write_reports(engine: Engine, folder: Path, set_dir: Path) -> list[dict[str, Any]]:
    """Evaluate the test queries twice (BM25 alone, then hybrid) and write both reports."""
    set_dir.mkdir(parents=True, exist_ok=True)
    lines = "\n".join(json.dumps(q) for q in QUERIES)
    (set_dir / "queries.jsonl").write_text(lines + "\n", encoding="utf-8")
    payloads = []
    for mode, label in ((SearchMode.BM25, "bm25 only"), (SearchMode.HYBRID, "hybrid")):
        report = evaluate(engine, set_dir, mode=mode)
        payload = report_payload([report], engine={"fusion": mode.value}, label=label)
        payloads.append(json.loads(write_report(folder, payload).read_text(encoding="utf-8")))
    return payloads


def screenshot(page: Any, name: str) -> Path:
    """Save a full-page screenshot into the kept folder."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
