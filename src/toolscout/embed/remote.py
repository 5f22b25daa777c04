"""Remote embedding APIs through pydantic-ai's ``Embedder`` (OpenAI, Cohere, Google, ...).

pydantic-ai gives one client over many providers with their auth and retry conventions, so
toolscout keeps no per-provider HTTP code. ``base_url`` points the OpenAI provider at any
OpenAI-compatible server (vLLM, Ollama, LM Studio, a gateway).
"""

from __future__ import annotations

import asyncio
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
        provider, _, model_name = spec.partition(":")
        if not model_name:
            raise ConfigError(f"embed_model {spec!r}: give 'provider:model'")
        self._spec = spec
        self._provider = provider
        self._model_name = model_name
        self._base_url = base_url
        self._api_key = api_key
        self._dim = dim
        if provider != "openai" or not (base_url or api_key):
            from pydantic_ai import Embedder as PAIEmbedder

            try:  # validate the spec now; pydantic-ai raises UserError for unknown providers
                PAIEmbedder(spec, defer_model_check=False)
            except Exception as exc:
                raise ConfigError(f"embed_model {spec!r}: {exc}") from exc

    @property
    def name(self) -> str:
        return self._spec

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    async def _call(self, texts: list[str], kind: str) -> Any:
        from pydantic_ai import Embedder as PAIEmbedder

        if self._provider == "openai" and (self._base_url or self._api_key):
            from openai import AsyncOpenAI
            from pydantic_ai.embeddings.openai import OpenAIEmbeddingModel
            from pydantic_ai.providers.openai import OpenAIProvider

            # A client (and event loop) per call, both closed: pydantic-ai's *_sync helpers
            # leave them open when called from worker threads.
            client = AsyncOpenAI(base_url=self._base_url, api_key=self._api_key or "none")
            async with client:
                model = OpenAIEmbeddingModel(
                    self._model_name, provider=OpenAIProvider(openai_client=client)
                )
                embedder = PAIEmbedder(model)
                if kind == "query":
                    return await embedder.embed_query(texts)
                return await embedder.embed_documents(texts)
        embedder = PAIEmbedder(self._spec)
        if kind == "query":
            return await embedder.embed_query(texts)
        return await embedder.embed_documents(texts)

    def _run(self, texts: Sequence[str], kind: str) -> Vectors:
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        try:
            result = asyncio.run(self._call(list(texts), kind))
        except Exception as exc:  # network and provider errors vary by provider
            raise EmbedError(f"remote embedding via {self._spec} failed: {exc}") from exc
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
