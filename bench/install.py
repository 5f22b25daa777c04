"""A newcomer's install, timed: build the wheel, `pip install` it into a fresh venv (plain pip,
no --no-deps, no lock), then run the README's commands offline and measure the venv.

    python bench/install.py [--keep DIR] [--uvx]

Prints one JSON object: seconds per step, the venv's size, its largest packages, and whether
torch / sentence-transformers / a safetensors file got in. Needs the package registry for the
install step only; the commands after it run with HF_HUB_OFFLINE=1 and no proxy variables.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def run(cmd: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return time.perf_counter() - start


def size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keep", type=Path, help="build the venv here and keep it")
    parser.add_argument("--uvx", action="store_true", help="also time `uvx --from WHEEL`")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="toolscout-install-"))
    work.mkdir(parents=True, exist_ok=True)
    times: dict[str, float] = {}
    dist = work / "dist"
    times["build wheel"] = run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)]
    )
    wheel = next(dist.glob("toolscout-*.whl"))
    venv = work / "venv"
    shutil.rmtree(venv, ignore_errors=True)
    times["python -m venv"] = run([sys.executable, "-m", "venv", str(venv)])
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    times["pip install WHEEL (no cache)"] = run(
        [*pip, "install", "-q", "--no-cache-dir", str(wheel)]
    )
    offline = {
        k: v
        for k, v in os.environ.items()
        if not k.lower().endswith("_proxy") and k != "PIP_INDEX_URL"
    }
    offline.update(
        HF_HUB_OFFLINE="1",
        TOOLSCOUT_DB=str(work / "index.db"),
        TOOLSCOUT_CACHE_DIR=str(work / "cache"),
        NO_COLOR="1",
    )
    ts = str(venv / "bin" / "toolscout")
    times["toolscout --version"] = run([ts, "--version"], env=offline)
    times["toolscout index --builtin"] = run([ts, "index", "--builtin"], env=offline)
    times["toolscout search (first, cold)"] = run(
        [ts, "search", "file a bug in the repo", "--limit", "3"], env=offline
    )
    times["toolscout search (again)"] = run(
        [ts, "search", "what's the weather in Berlin", "--limit", "3"], env=offline
    )
    site = next((venv / "lib").glob("python*/site-packages"))
    packages = sorted(
        ((p.name, size_mb(p)) for p in site.iterdir() if p.is_dir()), key=lambda x: -x[1]
    )
    names = {p.name.lower() for p in site.iterdir()}
    report: dict[str, Any] = {
        "wheel": wheel.name,
        "wheel_mb": round(wheel.stat().st_size / 1e6, 2),
        "seconds": {k: round(v, 1) for k, v in times.items()},
        "venv_mb": round(size_mb(venv), 1),
        "site_packages_mb": round(size_mb(site), 1),
        "largest": [(n, round(mb, 1)) for n, mb in packages[:8]],
        "torch": any(n.startswith("torch") for n in names),
        "sentence_transformers": any(n.startswith("sentence_transformers") for n in names),
        "safetensors_files": len(list(site.rglob("*.safetensors"))),
    }
    if args.uvx and not shutil.which("uvx"):
        raise SystemExit("--uvx: no uvx on PATH (pip install uv)")
    if args.uvx:
        env = {**offline, "UV_CACHE_DIR": str(work / "uv-cache")}
        env.pop("HF_HUB_OFFLINE")
        for label in ("cold cache", "warm cache"):
            times[f"uvx --from WHEEL toolscout --version ({label})"] = run(
                ["uvx", "--from", str(wheel), "toolscout", "--version"], env=env
            )
        report["seconds"] = {k: round(v, 1) for k, v in times.items()}
    print(json.dumps(report, indent=2))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
