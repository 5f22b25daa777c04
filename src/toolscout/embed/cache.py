"""A persistent vector cache keyed by (model, text): re-indexing the same text never re-embeds.

It wraps any Embedder. The cache is a plain SQLite file (no extensions needed), by default in the
user's cache directory; eval runs and rebuilds of the same catalog then cost no model time.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from toolscout.embed.base import Embedder, EmbedderWrapper, Vectors


class CachedEmbedder(EmbedderWrapper):
    """Embedder wrapper that looks vectors up by text hash before calling the model."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        super().__init__(inner)
        self.path = path
        self.calls = 0
        self.embedded_texts = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, v BLOB)")
        self._lock = threading.Lock()

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.inner.name}\x00{text}".encode()).hexdigest()

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Raises: EmbedError (from the wrapped model)."""
        keys = [self._key(t) for t in texts]
        found: dict[str, bytes] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                found.update(
                    self._conn.execute(f"SELECT key, v FROM vectors WHERE key IN ({marks})", chunk)
                )
        missing = [i for i, k in enumerate(keys) if k not in found]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if missing:
            self.calls += 1
            self.embedded_texts += len(missing)
            fresh = self.inner.embed([texts[i] for i in missing])
            with self._lock, self._conn:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO vectors(key, v) VALUES(?, ?)",
                    [(keys[i], fresh[j].tobytes()) for j, i in enumerate(missing)],
                )
            out[missing] = fresh
        for i, k in enumerate(keys):
            if k in found:
                out[i] = np.frombuffer(found[k], dtype=np.float32)
        return out

    def close(self) -> None:
        with self._lock:
            self._conn.close()
