"""What a search reads of its candidates' names: the learned ranker's view of each candidate
(search/rank.py), and the exact-name rule.

A search re-scores its first 100 fused candidates. Reading them from the store each time, even
as light rows, cost more than evaluating the trees; a name and a server only change with a
write, and every write moves the store's data version (:class:`~toolscout.store.base.IndexState`).
So the views come from a table of the whole catalog held for that version when it has one
(search/nametable.py, loaded apart), else from :class:`CandidateCache`, which keeps what it
read for the version a search read and forgets it all when it moves. What neither holds is read
with the store's narrow ``names`` read (two columns, nothing decoded). A store that cannot tell
its version (None) is read every time.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Mapping, Sequence
from functools import lru_cache
from itertools import islice
from typing import NamedTuple, Protocol

from toolscout.models import Scored
from toolscout.search.text import analyze, identifier_key
from toolscout.store.roles import ToolReads

#: How many candidates the cache holds; past it the oldest entries go first.
CACHE_SIZE = 65536


class Candidate(NamedTuple):
    """One candidate as the ranker reads it."""

    #: The analysed tokens of its name (empty for a tool the store no longer holds).
    name: frozenset[str]
    #: Its server, or its own id when it has none: a tool without a server is its own peer group.
    server: str


def candidate(tool_id: str, name: str, server: str | None) -> Candidate:
    """The ranker's view of one stored tool."""
    return Candidate(_token_set(name), server or tool_id)


def name_tokens(name: str) -> frozenset[str]:
    """The analysed tokens of a name, as a :class:`Candidate` holds them."""
    return frozenset(analyze(name))


def missing(tool_id: str) -> Candidate:
    """The view of an id the store does not hold: no name, a peer group of its own."""
    return Candidate(frozenset(), tool_id)


# Analysing a name costs more than the rest of its row; names repeat across tools.
_token_set = lru_cache(maxsize=CACHE_SIZE)(name_tokens)


class Catalog(Protocol):
    """The views of a whole catalog held for one data version (search/nametable.py)."""

    def views(
        self, ids: Sequence[str], version: Hashable, tools: int
    ) -> dict[str, Candidate] | None:
        """The views held among ``ids`` at ``version`` (a catalog of ``tools`` tools), or None
        while none of that version are held."""
        ...

    def close(self) -> None: ...


class CandidateCache:
    """:class:`Candidate` views by tool id for one index version at a time: from ``catalog``
    when it holds that version, else as read and remembered here. Thread-safe."""

    def __init__(
        self, tools: ToolReads, size: int = CACHE_SIZE, catalog: Catalog | None = None
    ) -> None:
        self.tools = tools
        self.size = size
        self.catalog = catalog
        self._lock = threading.Lock()
        self._version: Hashable | None = None
        self._known: dict[str, Candidate] = {}

    def get(
        self, ids: Sequence[str], version: Hashable | None, tools: int = 0
    ) -> dict[str, Candidate]:
        """The view of every id in ``ids`` at data ``version`` (what the search read of the
        index, ``tools``: its size); ids the store does not hold get :func:`missing`'s.

        Raises:
            StoreError: the read of the ids not yet known failed.
        """
        if version is None:
            return _complete(ids, self._read(ids))
        held = self.catalog.views(ids, version, tools) if self.catalog is not None else None
        if held is None:
            return self._remembered(ids, version)
        if len(held) < len(ids):
            # Written after the table's version, or gone: read (and remembered) as before.
            held.update(self._remembered([tid for tid in ids if tid not in held], version))
        return held

    def close(self) -> None:
        """Stop the catalog's loads."""
        if self.catalog is not None:
            self.catalog.close()

    def _remembered(self, ids: Sequence[str], version: Hashable) -> dict[str, Candidate]:
        """The views of ``ids`` remembered here for ``version``, the others read now."""
        with self._lock:
            if version != self._version:
                self._known = {}
                self._version = version
            known = self._known
            found = {tid: known[tid] for tid in ids if tid in known}
        if len(found) == len(ids):
            return found
        read = self._read([tid for tid in ids if tid not in found])
        with self._lock:
            # A write may have moved the version meanwhile: then these belong to no one.
            if self._version == version:
                self._remember(read)
        found.update(read)
        return _complete(ids, found)

    def _read(self, ids: Sequence[str]) -> dict[str, Candidate]:
        """The stored tools among ``ids``."""
        return {
            tid: candidate(tid, name, server)
            for tid, (name, server) in self.tools.names(ids).items()
        }

    def _remember(self, read: Mapping[str, Candidate]) -> None:
        known = self._known
        known.update(read)
        over = len(known) - self.size
        if over > 0:
            for tid in list(islice(known, over)):
                del known[tid]


def _complete(ids: Sequence[str], found: dict[str, Candidate]) -> dict[str, Candidate]:
    """``found``, with :func:`missing`'s view of every id in ``ids`` it lacks (not kept: such
    an id costs a read only while a search still names it)."""
    if len(found) < len(ids):
        for tid in ids:
            if tid not in found:
                found[tid] = missing(tid)
    return found


def exact_name_first(tools: ToolReads, text: str, fused: list[Scored]) -> list[Scored]:
    """``fused`` with the tools among its first 20 whose name *is* the request (any spelling:
    ``create-issue``, ``createIssue``) put first.

    Raises:
        StoreError: the names could not be read.
    """
    if " " in text or len(text) > 200:
        return fused
    key = identifier_key(text)
    if not key:
        return fused
    head = fused[:20]
    names = tools.names([h.id for h in head])
    exact = [h.id for h in head if h.id in names and identifier_key(names[h.id][0]) == key]
    if not exact:
        return fused
    first = set(exact)
    return [Scored(i, 1.0) for i in exact] + [h for h in fused if h.id not in first]
