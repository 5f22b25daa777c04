"""Stores: one protocol (:mod:`.base`), one module per backend, chosen by URL scheme."""

from toolscout.store.base import IndexEntry, IndexIdentity, Store, open_store

__all__ = ["IndexEntry", "IndexIdentity", "Store", "open_store"]
