"""Page weight and load time of every web console page, measured in headless Chromium.

    python bench/console.py [--db PATH] [--runs 7] [--out bench/out/console.json]

Starts the real ``toolscout serve`` on a free loopback port (over ``--db``, or a fresh index of
the starter catalog), writes two evaluation reports for the evaluations page, then loads each
page ``--runs`` times in Debian's Chromium driven by Playwright: cold (a new browser context,
nothing cached) and warm (the same page again in that context: the stylesheet and script come
from the browser cache). It reports per page the bytes transferred (response bodies of the
document and every asset it loaded, as the browser's Resource Timing counts them; decoded size
beside) and the median time to the ``load`` event.

Same-run baseline: ``GET /api/v1/search`` for the playground's query, loaded in the same browser
(the JSON answer alone: what the page adds on top of the API) and ``/health``.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

QUERY = "send an email to a colleague"
QUERIES = [
    {"id": "q1", "query": QUERY, "gold": ["gmail::send_email"], "group": "paraphrase"},
    {"id": "q2", "query": "open a new issue in a repository", "gold": ["github::create_issue"],
     "group": "paraphrase"},
    {"id": "q3", "query": "create issue", "gold": ["github::create_issue"], "group": "keyword"},
]  # fmt: skip
PAGES = [
    ("search (empty)", "/"),
    ("search (5 hits)", "/?q=send+an+email+to+a+colleague"),
    ("search (20 hits)", "/?q=send+an+email+to+a+colleague&limit=20&strategy=direct"),
    ("catalog", "/catalog"),
    ("tool", "/catalog/tools/gmail::send_email"),
    ("skills", "/skills"),
    ("skill", "/skills/email"),
    ("evaluations (2 reports)", "/evals"),
    ("status", "/status"),
]
BASELINE = [
    ("baseline: JSON search", "/api/v1/search?query=send+an+email+to+a+colleague&limit=5"),
    ("baseline: /health", "/health"),
]
TIMING = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const res = performance.getEntriesByType('resource');
  const sum = (k) => res.reduce((a, r) => a + r[k], 0);
  return {load: nav.loadEventEnd, requests: 1 + res.length,
          wire: nav.encodedBodySize + sum('encodedBodySize'),
          decoded: nav.decodedBodySize + sum('decodedBodySize'),
          transfer: nav.transferSize + sum('transferSize')};
}"""
RUNNING = re.compile(r"Uvicorn running on (http://\S+:\d+)")


@dataclass
class Figures:
    page: str
    path: str
    requests: int
    wire_bytes: int
    decoded_bytes: int
    cold_ms: float
    warm_ms: float


def _index(db: Path, cache: Path) -> None:
    from toolscout.config import Settings
    from toolscout.engine import Engine
    from toolscout.ingest.jsonfile import CatalogFile

    starter = Path(str(resources.files("toolscout.data").joinpath("starter_catalog.json")))
    engine = Engine.open(Settings(db=str(db), cache_dir=str(cache)))
    try:
        engine.index([CatalogFile(starter, source="builtin").read()])
    finally:
        engine.close()


def _reports(db: Path, cache: Path, folder: Path, work: Path) -> None:
    from toolscout.config import Settings
    from toolscout.engine import Engine
    from toolscout.eval.reports import report_payload, write_report
    from toolscout.eval.run import evaluate
    from toolscout.models import SearchMode

    set_dir = work / "console-set"
    set_dir.mkdir(parents=True, exist_ok=True)
    (set_dir / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in QUERIES) + "\n")
    engine = Engine.open(Settings(db=str(db), cache_dir=str(cache)))
    try:
        for mode in (SearchMode.BM25, SearchMode.HYBRID):
            report = evaluate(engine, set_dir, mode=mode)
            write_report(folder, report_payload([report], engine={}, label=mode.value))
    finally:
        engine.close()


def _serve(db: Path, cache: Path, reports: Path) -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSCOUT_")}
    env.update(
        TOOLSCOUT_DB=str(db), TOOLSCOUT_CACHE_DIR=str(cache), TOOLSCOUT_REPORTS_DIR=str(reports)
    )
    exe = str(Path(sys.executable).with_name("toolscout"))
    proc = subprocess.Popen(
        [exe, "serve", "--port", "0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    found: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            match = RUNNING.search(line)
            if match:
                found.put(match.group(1))

    threading.Thread(target=read, daemon=True).start()
    try:
        return proc, found.get(timeout=120)
    except queue.Empty:
        proc.terminate()
        raise SystemExit("toolscout serve did not start within 120 s") from None


def measure(browser: Any, url: str, runs: int) -> tuple[dict[str, Any], list[float], list[float]]:
    cold: list[float] = []
    warm: list[float] = []
    first: dict[str, Any] = {}
    for _ in range(runs):
        context = browser.new_context()
        page = context.new_page()
        page.goto(url, wait_until="load")
        figures = page.evaluate(TIMING)
        cold.append(figures["load"])
        first = first or figures
        page.goto(url, wait_until="load")
        warm.append(page.evaluate(TIMING)["load"])
        context.close()
    return first, cold, warm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, help="an existing index (default: the starter catalog)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path("bench/out/console.json"))
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        sys.exit("chromium is not installed: scripts/setup --dev installs it")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="toolscout-console-") as tmp:
        work = Path(tmp)
        cache = work / "cache"
        db = args.db or work / "starter.db"
        if args.db is None:
            _index(db, cache)
        _reports(db, cache, work / "reports", work)
        proc, base = _serve(db, cache, work / "reports")
        rows: list[Figures] = []
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
                measure(browser, base + "/", 2)  # warm the server: model, caches, templates
                for name, path in [*PAGES, *BASELINE]:
                    first, cold, warm = measure(browser, base + path, args.runs)
                    rows.append(
                        Figures(
                            name, path, first["requests"], first["wire"], first["decoded"],
                            statistics.median(cold), statistics.median(warm),
                        )
                    )  # fmt: skip
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(f"{'page':26} {'requests':>8} {'bytes':>8} {'decoded':>8} {'cold ms':>8} {'warm ms':>8}")
    for r in rows:
        print(
            f"{r.page:26} {r.requests:8d} {r.wire_bytes:8d} {r.decoded_bytes:8d} "
            f"{r.cold_ms:8.1f} {r.warm_ms:8.1f}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps([asdict(r) for r in rows], indent=1))


if __name__ == "__main__":
    main()
