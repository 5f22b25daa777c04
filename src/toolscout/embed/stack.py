"""The embedder a :class:`~toolscout.config.Settings` describes, with its wrappers: the model
(local, ``onnx:PATH`` or remote), then the on-disk vector cache, the query batcher and the
query-vector cache, each only when its setting turns it on."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from toolscout.embed.base import Embedder, open_embedder
from toolscout.embed.batching import QueryBatcher
from toolscout.embed.cache import CachedEmbedder
from toolscout.embed.querycache import QueryCache

if TYPE_CHECKING:
    from toolscout.config import Settings


def open_embedder_stack(s: Settings) -> Embedder:
    """Raises: ConfigError (unknown model, bad options), EmbedError (the model cannot load)."""
    embedder: Embedder = open_embedder(
        s.embed_model,
        threads=s.embed_threads,
        base_url=s.embed_base_url,
        api_key=s.embed_api_key,
        dim=s.embed_dim,
        query_encoder=s.query_encoder,
        cache_dir=Path(s.cache_dir),
        models_dir=Path(s.models_dir),
    )
    if s.embed_cache:
        embedder = CachedEmbedder(embedder, Path(s.cache_dir) / "vectors.sqlite")
    if s.query_batch > 1:
        embedder = QueryBatcher(embedder, s.query_batch)
    if s.query_cache_size > 0:
        embedder = QueryCache(embedder, s.query_cache_size)
    return embedder


def query_encoder(embedder: Embedder) -> str | None:
    """``int8`` or ``exact`` for the local model (through its wrappers), None otherwise."""
    inner: object = embedder
    while inner is not None:
        found = getattr(inner, "query_encoder", None)
        if isinstance(found, str):
            return found
        inner = getattr(inner, "inner", None)
    return None
