"""The embedded store's approximate vector leg on a Qdrant Edge shard beside the SQLite file."""

from toolscout.store.sqlite.ann.leg import DEFAULT_MIN_TOOLS, AnnVectorLeg
from toolscout.store.sqlite.ann.shard import EdgeIndex, GraphParams

__all__ = ["DEFAULT_MIN_TOOLS", "AnnVectorLeg", "EdgeIndex", "GraphParams"]
