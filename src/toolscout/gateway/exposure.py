"""Dynamic exposure: tools a search found, added to the gateway's own tool list.

A client that supports ``notifications/tools/list_changed`` then calls them natively by name
instead of through ``call_tool``. The set is bounded by a count; what is listed is bounded
further by a token budget (:mod:`toolscout.gateway.budget`), most recently found or called
first, so the least recently used tool leaves first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

from toolscout.formats.names import provider_name
from toolscout.models import Tool


class Exposure:
    """A bounded, least-recently-used set of exposed tools, keyed by provider name."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._tools: OrderedDict[str, Tool] = OrderedDict()  # least recently used first
        self._lock = threading.Lock()

    def add(self, tools: Iterable[Tool]) -> bool:
        """Expose ``tools`` (most relevant first); ``True`` when the set changed."""
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
                self._tools.move_to_end(name)
            while len(self._tools) > self.capacity:
                self._tools.popitem(last=False)
        return changed

    def get(self, name: str) -> Tool | None:
        """The exposed tool called ``name`` (marking it recently used), or ``None``."""
        with self._lock:
            tool = self._tools.get(name)
            if tool is not None:
                self._tools.move_to_end(name)
            return tool

    def tools(self) -> list[tuple[str, Tool]]:
        """Every exposed tool with its name, in name order."""
        with self._lock:
            return sorted(self._tools.items())

    def recent(self) -> list[tuple[str, Tool]]:
        """Every exposed tool with its name, most recently found or called first."""
        with self._lock:
            return list(reversed(self._tools.items()))
