"""Whole write runs on one SQLite file: the writer lock that makes concurrent runs take turns,
and the swap at the end of ``index --rebuild``."""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlean

from toolscout.errors import StoreError
from toolscout.store.sqlite.database import SQLiteDatabase

log = logging.getLogger("toolscout")
_SIDECARS = ("-wal", "-shm", ".writer")


class RunLock:
    """An exclusive ``flock`` on ``<index>.writer`` for one write run, re-entrant per store.

    SQLite already serialises transactions; this serialises whole runs (read hashes, embed,
    write, classify), so a second run sees the first's work. The kernel drops the lock when the
    holding process dies: a killed writer never leaves it behind.
    """

    def __init__(self, database: SQLiteDatabase) -> None:
        self.database = database
        self._lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    @contextmanager
    def held(self) -> Iterator[None]:
        """Raises: StoreError when the index is read-only or the lock file cannot be opened."""
        with self._lock:
            if self._depth == 0:
                self._fd = self._take()
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._fd is not None:
                    os.close(self._fd)  # closing releases the flock
                    self._fd = None

    def _take(self) -> int:
        self.database.check_writable()
        path = f"{self.database.path}.writer"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot open the writer lock {path}: {exc.strerror}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning("waiting for another process writing %s", self.database.path)
            fcntl.flock(fd, fcntl.LOCK_EX)
        return fd


def staging_path(database: SQLiteDatabase) -> str:
    """``<index>.rebuild`` beside the file, leftovers of a killed rebuild removed.

    Raises: StoreError when the index is read-only."""
    database.check_writable()
    staging = Path(f"{database.path}.rebuild")
    for leftover in (staging, *(Path(f"{staging}{x}") for x in _SIDECARS)):
        leftover.unlink(missing_ok=True)
    shutil.rmtree(f"{staging}.vectors", ignore_errors=True)  # a shard of a killed rebuild
    return str(staging)


def replace_from(database: SQLiteDatabase, staging: str) -> None:
    """Copy the staging file over the live one with SQLite's online backup, in one write
    transaction on the live file, then delete it.

    Renaming the file instead is unsafe while other processes have it open in WAL mode: their
    ``-wal`` and ``-shm`` files would then be applied to the new file. The backup is seen by
    every connection as one commit (caches reload on the data version), and a crash before it
    commits leaves the old index.

    Raises: StoreError."""
    database.check_writable()
    try:
        source = sqlean.connect(staging, isolation_level=None)
    except sqlean.Error as exc:
        raise StoreError(f"cannot open the rebuilt index {staging}: {exc}") from exc
    try:
        with database.lock:
            source.backup(database.conn)
            database.writes += 1
    except sqlean.Error as exc:
        raise StoreError(f"cannot replace {database.path} with {staging}: {exc}") from exc
    finally:
        source.close()
    for done in (Path(staging), *(Path(f"{staging}{x}") for x in _SIDECARS)):
        done.unlink(missing_ok=True)
    shutil.rmtree(f"{staging}.vectors", ignore_errors=True)
