"""The recent searches of a gateway, so the call that follows one can be recorded with the
request it answered (the gateway sees both, in that order)."""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass


@dataclass(frozen=True)
class Search:
    """A request and the tool ids its answer listed."""

    query: str
    shown: tuple[str, ...]


class RecentSearches:
    """The last search of each client while it is connected, and the last ``size`` searches
    of all clients.

    A client is what it connects over (held weakly: a client gone takes its entry with it).
    Where the transport gives nothing that outlives one request (stateless requests), a call is
    matched with the newest search that listed the tool called: the agent picked it from that
    answer.
    """

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._by_client: weakref.WeakKeyDictionary[object, Search] = weakref.WeakKeyDictionary()
        self._recent: deque[Search] = deque(maxlen=size)
        self._lock = threading.Lock()

    def note(self, client: object | None, query: str, shown: Sequence[str]) -> None:
        """Remember ``query`` and its hits as ``client``'s last search (None: a request that
        stands alone)."""
        search = Search(query, tuple(shown))
        with self._lock:
            # A client that cannot be held weakly is matched through the recent searches.
            if client is not None:
                with suppress(TypeError):
                    self._by_client[client] = search
            self._recent.append(search)

    def origin(self, client: object | None, tool_id: str) -> Search | None:
        """The search a call of ``tool_id`` by ``client`` followed: the client's last search
        (None when it has not searched); for a request that stands alone (``client`` None),
        the newest search that listed ``tool_id``."""
        with self._lock:
            if client is not None:
                with suppress(TypeError):
                    return self._by_client.get(client)
                return None
            for search in reversed(self._recent):
                if tool_id in search.shown:
                    return search
        return None
