"""The server store: PostgreSQL with pgvector (:class:`PostgresStore`)."""

from toolscout.store.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
