"""The quality tier's installed model: a folder checked against its manifest at every load, a
clear error naming the install command when it is missing, and search on another model falling
back to the hand-set fusion with approximate scores.

The real quality model is ~440 MB and needs a download and torch to install, so these tests
stand the packaged default model's files in for it: what they test is the install folder's
contract, not the model's quality (docs/BENCHMARKS.md §11 has that).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from toolscout.config import Settings
from toolscout.embed.base import open_embedder
from toolscout.embed.export import require_export_packages
from toolscout.embed.installed import (
    FILES,
    INSTALL_COMMAND,
    MANIFEST,
    Manifest,
    install,
    model_folder,
)
from toolscout.embed.local import TOOL_MODEL_DIR
from toolscout.embed.quantize import sha256_of
from toolscout.engine import Engine
from toolscout.errors import ConfigError, EmbedError
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.search.config import SearchConfig
from toolscout.search.hybrid import HybridSearcher

STAND_IN = "stand-in-quality-onnx"


def _installed(models_dir: Path) -> Path:
    """A quality folder as `toolscout model install quality` leaves it, holding the packaged
    model's files."""
    folder = model_folder(models_dir)
    folder.mkdir(parents=True)
    packaged = Path(str(resources.files("toolscout.embed").joinpath(TOOL_MODEL_DIR)))
    for name in FILES:
        shutil.copy(packaged / name, folder / name)
    digests = {name: sha256_of(folder / name) for name in FILES}
    Manifest("quality", STAND_IN, "stand-in", "int8", digests, "test").write(folder / MANIFEST)
    return folder


def test_a_missing_quality_model_names_the_install_command(tmp_path: Path) -> None:
    with pytest.raises(EmbedError) as caught:
        open_embedder("local:quality", models_dir=tmp_path / "models")
    message = str(caught.value)
    assert INSTALL_COMMAND in message and "toolscout[quality]" in message
    assert str(tmp_path / "models" / "quality") in message


def test_an_installed_folder_loads_under_its_manifest_name(tmp_path: Path) -> None:
    folder = _installed(tmp_path / "models")
    model = open_embedder("local:quality", models_dir=tmp_path / "models", threads=1)
    assert model.name == STAND_IN
    assert getattr(model, "graph_sha256", None) == sha256_of(folder / "model.onnx")
    vectors = model.embed(["file a bug in the repo"])
    assert vectors.shape == (1, model.dim)


@pytest.mark.parametrize("name", FILES)
def test_a_file_altered_after_install_refuses_to_load(tmp_path: Path, name: str) -> None:
    folder = _installed(tmp_path / "models")
    with (folder / name).open("ab") as f:
        f.write(b" ")
    with pytest.raises(EmbedError, match=rf"{name} has sha256 [0-9a-f]{{64}}, its manifest"):
        open_embedder("local:quality", models_dir=tmp_path / "models")


def test_a_malformed_manifest_says_to_reinstall(tmp_path: Path) -> None:
    folder = _installed(tmp_path / "models")
    raw = json.loads((folder / MANIFEST).read_text())
    del raw["sha256"]["tokenizer.json"]
    (folder / MANIFEST).write_text(json.dumps(raw))
    with pytest.raises(EmbedError, match=rf"`{INSTALL_COMMAND} --force`"):
        open_embedder("local:quality", models_dir=tmp_path / "models")


def test_installing_over_a_verified_install_keeps_it(tmp_path: Path) -> None:
    _installed(tmp_path / "models")
    manifest, fresh = install(tmp_path / "models")
    assert (manifest.name, fresh) == (STAND_IN, False)


def test_an_unknown_tier_or_precision_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown model tier 'huge'; installable: quality"):
        install(tmp_path, "huge")
    with pytest.raises(ConfigError, match="precision must be one of auto, int8, fp32"):
        install(tmp_path, precision="fp16")


def test_the_export_without_torch_names_the_command_that_installs_it() -> None:
    with pytest.raises(ConfigError) as caught:
        require_export_packages(("json", "toolscout_absent_exporter"))
    message = str(caught.value)
    assert "needs toolscout_absent_exporter (once" in message  # only what is missing
    assert "pip install 'toolscout[quality]'" in message and "scripts/setup --train" in message


def test_search_on_another_model_ranks_by_the_fusion_and_says_scores_are_approximate(
    tmp_path: Path,
) -> None:
    _installed(tmp_path / "models")
    settings = Settings(
        db=str(tmp_path / "q.db"),
        embed_model="local:quality",
        models_dir=str(tmp_path / "models"),
        cache_dir=str(tmp_path / "cache"),
    )
    engine = Engine.open(settings)
    try:
        starter = resources.files("toolscout").joinpath("data/starter_catalog.json")
        engine.index([CatalogFile(Path(str(starter)), source="starter").read()])
        searcher = HybridSearcher(engine.store, engine.embedder, SearchConfig(learned_ranker=True))
        assert searcher.ranker is None  # fitted on the default model's cosines
        assert searcher.calibration_status.startswith("approximate: fitted for tool-minilm-l6")
        assert STAND_IN in searcher.calibration_status
        hits = searcher.search("read a file from disk", limit=5)
        assert hits and all(0.0 <= h.score <= 1.0 for h in hits)
        assert not searcher.no_match(hits)  # flagged only when nothing is found
        searcher.close()
        assert engine.searcher.config.learned_ranker and engine.searcher.ranker is None
        result = engine.search("read a file from disk", limit=3)
        assert result.hits
        assert str(result.metadata["calibration"]).startswith("approximate: fitted for")
        assert result.metadata["ranking"] == "adaptive"
        assert "packaged model's cosines" in str(result.metadata["ranker_off"])
    finally:
        engine.close()


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolscout", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
        check=False,
    )


def test_the_cli_says_how_to_install_a_missing_quality_model(tmp_path: Path) -> None:
    models = str(tmp_path / "models")
    shown = _cli("model", "show", "--models-dir", models)
    assert shown.returncode == 7, shown.stderr
    assert "Traceback" not in shown.stderr and INSTALL_COMMAND in shown.stderr
    catalog = tmp_path / "tools.json"
    catalog.write_text(json.dumps([{"name": "read_file", "description": "Read a file."}]))
    indexed = _cli(
        "index", str(catalog), "--db", str(tmp_path / "x.db"),
        TOOLSCOUT_EMBED_MODEL="local:quality", TOOLSCOUT_MODELS_DIR=models,
    )  # fmt: skip
    assert indexed.returncode == 7, indexed.stderr
    assert "Traceback" not in indexed.stderr and INSTALL_COMMAND in indexed.stderr


def test_the_cli_shows_a_verified_install(tmp_path: Path) -> None:
    _installed(tmp_path / "models")
    shown = _cli("model", "show", "--models-dir", str(tmp_path / "models"), "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["name"] == STAND_IN
