"""An in-memory LRU of finished searches, valid for one version of the index.

A served index answers many agents, and agents repeat themselves: the same capability request
("send an email", "create a GitHub issue") comes back from every session that needs it. A
repeated request against an unchanged index has exactly one right answer, the one computed
last time, so it is kept: key = the validated request, value = the immutable result. Every
entry is dropped the moment the store reports a new data version (any write, from any
process), so a cached answer is never staler than a freshly computed one.

The caller passes the version it read (once per search, with the rest of the index state);
a store that cannot tell its version cheaply gives ``None``, and then nothing is cached.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class ResultCache(Generic[V]):
    """Thread-safe LRU keyed by request, cleared whenever the index version changes."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._version: Hashable | None = None
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def lookup(self, key: Hashable, version: Hashable | None) -> V | None:
        """The value cached for ``key`` at index ``version``, or None; pass the same version
        to :meth:`store`, so a result computed while a write landed is dropped."""
        if version is None:
            return None
        with self._lock:
            if version != self._version:
                self._items.clear()
                self._version = version
            value = self._items.get(key)
            if value is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return value

    def store(self, key: Hashable, version: Hashable | None, value: V) -> None:
        """Keep ``value`` if the index is still at ``version`` (the one :meth:`lookup` saw)."""
        if version is None:
            return
        with self._lock:
            if version != self._version:
                return
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._version = None

    def stats(self) -> dict[str, int]:
        """``hits``, ``misses`` and ``entries`` since start."""
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "entries": len(self._items)}
