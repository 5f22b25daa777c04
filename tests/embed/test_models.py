"""The packaged tool-retrieval model, the stock model by name, and ``onnx:PATH`` folders."""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

import numpy as np
import onnx
import pytest

from toolscout.config import Settings
from toolscout.embed.base import DEFAULT_MODEL, open_embedder
from toolscout.embed.local import (
    STOCK_NAME,
    TOOL_MODEL_DIR,
    TOOL_MODEL_NAME,
    TOOL_MODEL_SHA256,
    check_sha256,
)
from toolscout.embed.onnx import balanced_halves
from toolscout.engine import Engine
from toolscout.errors import ConfigError, EmbedError
from toolscout.ingest.jsonfile import CatalogFile

TEXTS = [
    "file a bug in the repo",
    "schedule a meeting with John tomorrow",
    "翻译这段文字",
    "github create issue (github): Create a new issue in a repository. Parameters: owner, repo.",
]


def _packaged() -> Path:
    return Path(str(resources.files("toolscout.embed").joinpath(TOOL_MODEL_DIR)))


def _folder_copy(tmp_path: Path, config: dict[str, object] | None = None) -> Path:
    folder = tmp_path / "my-model"
    folder.mkdir(parents=True)
    for name in ("model.onnx", "tokenizer.json", "config.json"):
        shutil.copy(_packaged() / name, folder / name)
    if config is not None:
        (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_the_default_is_the_packaged_tool_model_with_its_pinned_int8_graph() -> None:
    model = open_embedder(DEFAULT_MODEL, threads=1)
    assert model.name == TOOL_MODEL_NAME and model.dim == 384
    graph = _packaged() / "model.onnx"
    check_sha256(graph, TOOL_MODEL_SHA256)
    ops = {node.op_type for node in onnx.load(str(graph)).graph.node}
    assert "MatMulInteger" in ops
    vectors = model.embed(TEXTS)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_a_tool_vector_does_not_depend_on_the_texts_embedded_with_it() -> None:
    model = open_embedder(DEFAULT_MODEL, threads=1)
    together = model.embed(TEXTS)
    for i, text in enumerate(TEXTS):
        assert np.array_equal(model.embed([text])[0], together[i])
    assert np.array_equal(model.embed_query(TEXTS), together)


def test_documents_embedded_by_parallel_sessions_are_the_same_bytes() -> None:
    texts = [f"{text} #{i}" for i in range(12) for text in TEXTS]  # enough to share out
    one = open_embedder(DEFAULT_MODEL, threads=1)
    two = open_embedder(DEFAULT_MODEL, threads=2)
    alone = one.embed(texts)
    assert np.array_equal(two.embed(texts), alone)
    assert np.array_equal(two.embed_query(texts[:3]), alone[:3])


def test_queries_run_on_one_thread_and_get_the_two_thread_sessions_vectors() -> None:
    model = open_embedder(DEFAULT_MODEL, threads=2)
    texts = [f"{text} #{i}" for i in range(3) for text in TEXTS]  # too few to share out
    assert np.array_equal(model.embed_query(texts), model.embed(texts))
    query_session = model._query_session  # type: ignore[attr-defined]
    assert query_session.get_session_options().intra_op_num_threads == 1


def test_a_requests_intents_shared_between_two_sessions_are_the_same_bytes() -> None:
    model = open_embedder(DEFAULT_MODEL, threads=2)
    alone = np.stack([model.embed_query([text])[0] for text in TEXTS])
    assert np.array_equal(model.embed_query(TEXTS), alone)
    assert model._query_helper is not None  # type: ignore[attr-defined]  # it took a share


def test_a_request_and_its_intents_are_shared_in_halves_of_equal_length() -> None:
    """The whole request (about as long as its intents together) goes to one session, the
    intents to the other; every text once; the same bytes as each text embedded alone."""
    assert balanced_halves([20, 31, 53]) == ([2], [1, 0])
    assert balanced_halves([5, 5]) == ([0], [1])
    assert balanced_halves([9, 1, 1, 1, 8]) == ([0, 2], [4, 1, 3])
    model = open_embedder(DEFAULT_MODEL, threads=2)
    texts = [*TEXTS[:2], f"{TEXTS[0]}. {TEXTS[1]}"]
    alone = np.stack([model.embed_query([text])[0] for text in texts])
    assert np.array_equal(model.embed_query(texts), alone)


def test_a_damaged_model_file_is_refused_with_its_checksum(tmp_path: Path) -> None:
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(EmbedError, match="sha256"):
        check_sha256(bad, TOOL_MODEL_SHA256)


def test_the_stock_model_stays_selectable_by_name() -> None:
    stock = open_embedder("local:minilm-l6-int8", threads=1)
    tuned = open_embedder(DEFAULT_MODEL, threads=1)
    assert stock.name == STOCK_NAME != tuned.name
    assert not np.allclose(stock.embed(TEXTS[:1]), tuned.embed(TEXTS[:1]))


def test_an_index_built_with_the_stock_model_refuses_the_new_default_and_says_rebuild(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "old.db")
    catalog = tmp_path / "tools.jsonl"
    catalog.write_text(json.dumps({"id": "t1", "name": "create_issue", "description": "x"}) + "\n")
    old = Engine.open(Settings(db=db, cache_dir=str(tmp_path), embed_model="local:minilm-l6-int8"))
    old.index([CatalogFile(catalog).read()])
    old.close()
    with pytest.raises(ConfigError, match=r"(?i)rebuild"):
        Engine.open(Settings(db=db, cache_dir=str(tmp_path)))


def test_an_onnx_folder_embeds_like_the_same_graph_packaged(tmp_path: Path) -> None:
    folder = _folder_copy(tmp_path)
    mine = open_embedder(f"onnx:{folder}", threads=1)
    packaged = open_embedder(DEFAULT_MODEL, threads=1)
    assert mine.name.startswith("onnx:my-model:") and mine.dim == 384
    assert np.array_equal(mine.embed(TEXTS), packaged.embed(TEXTS))


def test_an_onnx_folders_pooling_comes_from_its_config_and_names_the_index(
    tmp_path: Path,
) -> None:
    mean = open_embedder(f"onnx:{_folder_copy(tmp_path / 'a')}", threads=1)
    cls = open_embedder(f"onnx:{_folder_copy(tmp_path / 'b', {'pooling': 'cls'})}", threads=1)
    assert mean.name != cls.name
    assert not np.allclose(mean.embed(TEXTS[:1]), cls.embed(TEXTS[:1]))


@pytest.mark.parametrize(
    ("damage", "field"),
    [
        ("no_folder", "not a folder"),
        ("no_tokenizer", "tokenizer.json"),
        ("bad_pooling", "pooling"),
        ("two_graphs", "model.onnx"),
    ],
)
def test_a_malformed_onnx_folder_is_a_config_error_naming_the_fix(
    tmp_path: Path, damage: str, field: str
) -> None:
    folder = _folder_copy(tmp_path)
    if damage == "no_folder":
        folder = tmp_path / "missing"
    elif damage == "no_tokenizer":
        (folder / "tokenizer.json").unlink()
    elif damage == "bad_pooling":
        (folder / "config.json").write_text(json.dumps({"pooling": "max"}))
    else:
        (folder / "model.onnx").rename(folder / "a.onnx")
        shutil.copy(folder / "a.onnx", folder / "b.onnx")
    with pytest.raises(ConfigError, match=field):
        open_embedder(f"onnx:{folder}", threads=1)
