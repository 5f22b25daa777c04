"""What the SQL stores share, written once over a small :class:`Dialect`: the tool-row mapping
and reads, the skill tables and the enrichment tables (:class:`SQLStore` composes them)."""

from toolscout.store.sql.dialect import POSTGRES, SQLITE, Database, Dialect
from toolscout.store.sql.store import SQLStore

__all__ = ["POSTGRES", "SQLITE", "Database", "Dialect", "SQLStore"]
