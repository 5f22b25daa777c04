"""What the gateway can call: the indexed tools of configured servers that the policy allows.

The index may hold more than the gateway can run (servers synced earlier but missing from
its configuration, prompts and resources, tools the policy refuses). :class:`CallableTools`
keeps the ids of the ones it can, read once per data version of the store, so that
``search_tools`` offers only those by default and ``call_tool`` can resolve the names agents
actually send: a toolscout id, the provider name the gateway exposes
(``time__get_current_time``), or a bare tool name when one callable tool has it.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from toolscout.errors import ToolNotFound
from toolscout.formats.names import tool_id_from_name
from toolscout.gateway.budget import direct_entry, tokens
from toolscout.models import ItemType, SearchRequest, Tool

if TYPE_CHECKING:
    from toolscout.engine import Engine

#: Tools read per page when the catalog is rebuilt (the listing's largest page).
PAGE = 500
#: How many close ids a miss suggests.
SUGGESTIONS = 3


class UnknownTool(ToolNotFound):
    """No callable tool answers to the name; ``suggestions`` are the closest ids."""

    def __init__(self, name: str, suggestions: Sequence[str]) -> None:
        super().__init__(name)
        self.suggestions = tuple(suggestions)
        if self.suggestions:
            self.args = (f"{self.args[0]}; did you mean {', '.join(self.suggestions)}?",)


@dataclass(frozen=True)
class _Snapshot:
    version: Hashable | None
    ids: tuple[str, ...]
    by_name: dict[str, tuple[str, ...]]
    #: Estimated tokens of the configured servers' own tools lists, all of them.
    direct_tokens: int


class CallableTools:
    """The callable tool ids of one gateway, rebuilt whenever the store's data changes.

    ``allows(tool)`` is the gateway's test (configured server and policy)."""

    def __init__(
        self, engine: Engine, servers: Sequence[str], allows: Callable[[Tool], bool]
    ) -> None:
        self.engine = engine
        self.servers = tuple(sorted(servers))
        self.allows = allows
        self._snapshot: _Snapshot | None = None
        self._lock = threading.Lock()

    def _current(self) -> _Snapshot:
        version = self.engine.state().version
        with self._lock:
            snap = self._snapshot
            if snap is not None and version is not None and snap.version == version:
                return snap
            snap = self._read(version)
            self._snapshot = snap
            return snap

    def _read(self, version: Hashable | None) -> _Snapshot:
        ids: list[str] = []
        by_name: dict[str, list[str]] = {}
        direct = 0
        if self.servers:
            offset = 0
            while True:
                page, total = self.engine.list_tools(
                    servers=self.servers, item_types=[ItemType.TOOL], offset=offset, limit=PAGE
                )
                for tool in page:
                    direct += tokens(direct_entry(tool))
                    if self.allows(tool):
                        ids.append(tool.id)
                        by_name.setdefault(tool.name, []).append(tool.id)
                offset += len(page)
                if not page or offset >= total:
                    break
        return _Snapshot(version, tuple(ids), {k: tuple(v) for k, v in by_name.items()}, direct)

    def ids(self) -> tuple[str, ...]:
        """Every callable tool id, in id order.

        Raises:
            StoreError: the index could not be read.
        """
        return self._current().ids

    def direct_tokens(self) -> int:
        """Estimated tokens a client would load listing the configured servers directly.

        Raises:
            StoreError: the index could not be read.
        """
        return self._current().direct_tokens

    def narrow(self, request: SearchRequest) -> SearchRequest:
        """``request`` limited to callable tools, unless it asks for prompts or resources
        (which are read, not called).

        Raises:
            StoreError: the index could not be read.
        """
        if request.item_type is not None and ItemType(request.item_type) is not ItemType.TOOL:
            return request
        ids = self.ids()
        if request.tool_ids is not None:
            wanted = set(request.tool_ids)
            ids = tuple(i for i in ids if i in wanted)
        return replace(request, item_type=ItemType.TOOL, tool_ids=ids)

    def resolve(self, name: str) -> Tool:
        """The tool an agent means by ``name``: its id, its provider name, or the bare name
        of exactly one callable tool.

        Raises:
            UnknownTool: none of those; it suggests the closest callable ids.
            StoreError: the index could not be read.
        """
        try:
            return self.engine.get_tool(name)
        except ToolNotFound:
            pass
        decoded = tool_id_from_name(name)
        if decoded is not None and decoded != name:
            try:
                return self.engine.get_tool(decoded)
            except ToolNotFound:
                pass
        snap = self._current()
        named = snap.by_name.get(name, ())
        if len(named) == 1:
            return self.engine.get_tool(named[0])
        raise UnknownTool(name, named or self.closest(name, snap.ids))

    @staticmethod
    def closest(name: str, ids: Sequence[str]) -> list[str]:
        """The ids most like ``name`` (whole id or bare tool name), best first."""
        key = (decoded if (decoded := tool_id_from_name(name)) else name).lower()
        scored = []
        for tool_id in ids:
            bare = tool_id.split("::", 1)[-1].lower()
            ratio = max(
                difflib.SequenceMatcher(None, key, tool_id.lower()).ratio(),
                difflib.SequenceMatcher(None, key.split("::", 1)[-1], bare).ratio(),
            )
            if ratio >= 0.6:
                scored.append((-ratio, tool_id))
        return [tool_id for _, tool_id in sorted(scored)[:SUGGESTIONS]]
