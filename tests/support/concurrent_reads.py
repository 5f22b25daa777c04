"""Searches from several threads while the test's thread writes: each search's check must hold
of every answer (a committed state, never half a write)."""

from __future__ import annotations

import threading
from collections.abc import Callable


def reads_beside_writes(
    read: Callable[[], int], write: Callable[[], None], *, readers: int = 3
) -> list[int]:
    """Run ``read`` in a loop on ``readers`` threads while ``write`` runs here; returns what
    each read returned, in order. A read's exception (a failed check) is raised here."""
    errors: list[BaseException] = []
    seen: list[int] = []
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                seen.append(read())
            except BaseException as exc:  # raised below, in the test's thread
                errors.append(exc)
                return

    threads = [threading.Thread(target=loop) for _ in range(readers)]
    for t in threads:
        t.start()
    try:
        write()
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
    if errors:
        raise errors[0]
    return seen
