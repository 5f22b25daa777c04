"""Remote embedding APIs through pydantic-ai's ``Embedder`` (OpenAI, Cohere, Google, ...).

pydantic-ai gives one client over many providers with their auth and retry conventions, so
toolscout keeps no per-provider HTTP code. ``base_url`` points the OpenAI provider at any
OpenAI-compatible server (vLLM, Ollama, LM Studio, a gateway).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from toolscout.embed.base import Vectors, normalise_rows
from toolscout.errors import ConfigError, EmbedError


class RemoteEmbedder:
    """An embedder backed by a remote API; ``dim`` is probed on first use when not given."""

    def __init__(
        self,
        spec: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dim: int | None = None,
    ) -> None:
        from pydantic_ai import Embedder as PAIEmbedder

        provider, _, model_name = spec.partition(":")
        model: Any = spec
        if provider == "openai" and (base_url or api_key):
            from pydantic_ai.embeddings.openai import OpenAIEmbeddingModel
            from pydantic_ai.providers.openai import OpenAIProvider

            model = OpenAIEmbeddingModel(
                model_name, provider=OpenAIProvider(base_url=base_url, api_key=api_key or "none")
            )
        try:
            self._embedder = PAIEmbedder(model)
        except Exception as exc:  # pydantic-ai raises UserError for unknown providers
            raise ConfigError(f"embedding model {spec!r}: {exc}") from exc
        self._name = spec
        self._dim = dim

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def _run(self, texts: Sequence[str], kind: str) -> Vectors:
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        try:
            if kind == "query":
                result = self._embedder.embed_query_sync(list(texts))
            else:
                result = self._embedder.embed_documents_sync(list(texts))
        except Exception as exc:  # network and provider errors vary by provider
            raise EmbedError(f"remote embedding via {self._name} failed: {exc}") from exc
        matrix = normalise_rows(np.asarray(result.embeddings, dtype=np.float32))
        if self._dim is None:
            self._dim = int(matrix.shape[1])
        return matrix

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Raises: EmbedError."""
        return self._run(texts, "document")

    def embed_query(self, texts: Sequence[str]) -> Vectors:
        """Raises: EmbedError."""
        return self._run(texts, "query")
