"""The Source protocol: anything that can list tools (files, MCP servers, tool directories)."""

from __future__ import annotations

from typing import Protocol

from toolscout.models import Loaded


class Source(Protocol):
    """A place tools come from. ``name`` is stored as each tool's ``source``."""

    @property
    def name(self) -> str: ...

    def read(self) -> Loaded:
        """List the source's items now. Raises: IngestError when nothing can be read at all."""
        ...
