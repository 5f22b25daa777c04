"""Qdrant as the vector leg of the PostgreSQL store (PostgreSQL stays the source of truth)."""

from toolscout.store.postgres.vector.qdrant.leg import QdrantVectorLeg
from toolscout.store.postgres.vector.qdrant.target import QdrantTarget, parse_qdrant_url

__all__ = ["QdrantTarget", "QdrantVectorLeg", "parse_qdrant_url"]
