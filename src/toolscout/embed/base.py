"""The Embedder protocol and the factory that picks one from a model spec.

Model specs: ``local:tool-minilm-l6`` (default, offline; ``local:minilm-l6-int8`` is the stock
MiniLM; ``local:quality`` the larger model installed by ``toolscout model install quality``,
:mod:`toolscout.embed.installed`), ``onnx:PATH`` (a local folder with an ONNX graph and
tokenizer.json, see :mod:`toolscout.embed.onnx`) or ``<provider>:<model>`` for any embedding
provider pydantic-ai knows (``openai:text-embedding-3-small``, ``cohere:...``, ``google:...``);
an OpenAI-compatible server is reached with ``openai:<model>`` plus a base URL.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from toolscout.errors import ConfigError

Vectors = NDArray[np.float32]

DEFAULT_MODEL = "local:tool-minilm-l6"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 rows; one call per batch."""

    @property
    def name(self) -> str:
        """A stable identifier recorded in the index (model and variant)."""
        ...

    @property
    def dim(self) -> int:
        """Vector dimension."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed documents. Raises: EmbedError."""
        ...

    def embed_query(self, texts: Sequence[str]) -> Vectors:
        """Embed search queries (some models treat them differently). Raises: EmbedError."""
        ...


class EmbedderWrapper:
    """Base of the wrappers around a model (caches, batching): the wrapped model's name and
    dimension, and both calls passed through; a subclass overrides what it changes."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        """The wrapped model's name (a wrapper does not change the vectors)."""
        return self.inner.name

    @property
    def dim(self) -> int:
        """The wrapped model's dimension."""
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Raises: EmbedError (from the wrapped model)."""
        return self.inner.embed(texts)

    def embed_query(self, texts: Sequence[str]) -> Vectors:
        """Raises: EmbedError (from the wrapped model)."""
        return self.inner.embed_query(texts)


def normalise_rows(matrix: NDArray[np.floating]) -> Vectors:
    """Scale each row to unit length (zero rows stay zero)."""
    m = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Vectors = (m / norms).astype(np.float32)
    return out


def open_embedder(
    spec: str = DEFAULT_MODEL,
    *,
    threads: int | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    dim: int | None = None,
    query_encoder: str = "int8",
    cache_dir: Path | None = None,
    models_dir: Path | None = None,
) -> Embedder:
    """Build the embedder named by ``spec`` (``models_dir``: where installed models live,
    default the user data directory's ``models``).

    Raises:
        ConfigError: the spec is malformed or names an unknown local model.
        EmbedError: the model files cannot be loaded, or an installed tier is not installed.
    """
    provider, sep, model = spec.partition(":")
    if not sep or not model:
        raise ConfigError(
            f"embedding model {spec!r} must look like 'provider:model', "
            f"e.g. {DEFAULT_MODEL!r} or 'openai:text-embedding-3-small'"
        )
    if provider == "local":
        from toolscout.embed.installed import TIERS, load_installed
        from toolscout.embed.local import load_local

        if model in TIERS:
            from toolscout.config.settings import default_models_dir

            root = models_dir if models_dir is not None else Path(default_models_dir())
            return load_installed(model, root, threads)

        return load_local(
            model,
            threads=threads,
            query_encoder=query_encoder,  # type: ignore[arg-type]  # load_local validates it
            cache_dir=cache_dir,
        )
    if provider == "onnx":
        import os

        from toolscout.embed.onnx import load_folder

        n = threads or min(2, os.cpu_count() or 1)
        return load_folder(model, n)
    from toolscout.embed.remote import RemoteEmbedder

    return RemoteEmbedder(spec, base_url=base_url, api_key=api_key, dim=dim)
