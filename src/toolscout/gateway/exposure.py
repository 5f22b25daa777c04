"""Dynamic exposure: tools a search found, added to the gateway's own tool list.

A client that supports ``notifications/tools/list_changed`` then calls them natively by name
instead of through ``call_tool``. The list is bounded: the least recently found or called tool
leaves first.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from cachetools import Cache, LRUCache

from toolscout.formats.names import provider_name
from toolscout.models import Tool


class Exposure:
    """A bounded, least-recently-used set of exposed tools, keyed by provider name."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._tools: LRUCache[str, Tool] = LRUCache(maxsize=max(1, capacity))
        self._lock = threading.Lock()

    def add(self, tools: Iterable[Tool]) -> bool:
        """Expose ``tools`` (most relevant first); ``True`` when the list changed."""
        if self.capacity == 0:
            return False
        changed = False
        with self._lock:
            # Insert in reverse so the best hit is the most recently used one.
            for tool in reversed(list(tools)):
                name = provider_name(tool.id)
                if self._tools.get(name) != tool:
                    changed = True
                self._tools[name] = tool
        return changed

    def get(self, name: str) -> Tool | None:
        """The exposed tool called ``name`` (marking it recently used), or ``None``."""
        with self._lock:
            return self._tools.get(name)

    def tools(self) -> list[tuple[str, Tool]]:
        """Every exposed tool with its name, in name order."""
        with self._lock:
            # Cache.__getitem__ reads without touching the recency order (LRUCache's moves it).
            return [(name, Cache.__getitem__(self._tools, name)) for name in sorted(self._tools)]
