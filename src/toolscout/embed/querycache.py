"""An in-memory LRU of query vectors keyed by query text.

A served index answers many agents whose requests repeat ("send an email", "create a GitHub
issue"). Embedding the query is most of a search's time on CPU (~8 ms of ~11 ms at 10k tools),
so a repeated query skips the model entirely. Document embedding passes straight through (the
persistent cache in :mod:`toolscout.embed.cache` handles that).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from toolscout.embed.base import Embedder, EmbedderWrapper, Vectors


class QueryCache(EmbedderWrapper):
    """Embedder wrapper caching ``embed_query`` rows (LRU, thread-safe) with hit counters."""

    def __init__(self, inner: Embedder, size: int = 4096) -> None:
        super().__init__(inner)
        self.size = max(1, size)
        self.hits = 0
        self.misses = 0
        self._rows: OrderedDict[str, Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def embed_query(self, texts: Sequence[str]) -> Vectors:
        """Cached rows for known texts, one model call for the rest.

        Raises: EmbedError (from the wrapped model).
        """
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        missing: list[int] = []
        with self._lock:
            for i, text in enumerate(texts):
                row = self._rows.get(text)
                if row is None:
                    missing.append(i)
                    continue
                self._rows.move_to_end(text)
                out[i] = row
            self.hits += len(texts) - len(missing)
            self.misses += len(missing)
        if missing:
            fresh = self.inner.embed_query([texts[i] for i in missing])
            with self._lock:
                for j, i in enumerate(missing):
                    out[i] = fresh[j]
                    # A copy: callers may modify the array they get back.
                    self._rows[texts[i]] = fresh[j].copy()
                    self._rows.move_to_end(texts[i])
                while len(self._rows) > self.size:
                    self._rows.popitem(last=False)
        return out

    def stats(self) -> dict[str, int]:
        """``hits``, ``misses`` and ``entries`` since start."""
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "entries": len(self._rows)}
