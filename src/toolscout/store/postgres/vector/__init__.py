"""The PostgreSQL store's vector legs: :class:`VectorLeg` and its implementations (pgvector over
the rows; Qdrant beside them, in ``qdrant/``)."""

from toolscout.store.postgres.vector.base import VectorLeg

__all__ = ["VectorLeg"]
