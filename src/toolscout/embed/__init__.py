"""Embedders: the offline default (:mod:`.local`), remote APIs via pydantic-ai (:mod:`.remote`)."""

from toolscout.embed.base import Embedder, open_embedder

__all__ = ["Embedder", "open_embedder"]
