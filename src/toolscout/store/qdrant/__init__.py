"""Qdrant as the vector leg of the PostgreSQL store (PostgreSQL stays the source of truth)."""

from toolscout.store.qdrant.leg import QdrantVectorLeg
from toolscout.store.qdrant.target import QdrantTarget, parse_qdrant_url

__all__ = ["QdrantTarget", "QdrantVectorLeg", "parse_qdrant_url"]
