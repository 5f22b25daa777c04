"""The Source protocol: anything that can list tools (files, MCP servers, tool directories)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from toolscout.models import Problem, Tool


@dataclass
class Loaded:
    """What a source produced: the tools it could read and the entries it skipped."""

    source: str
    tools: list[Tool] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


class Source(Protocol):
    """A place tools come from. ``name`` is stored as each tool's ``source``."""

    @property
    def name(self) -> str: ...

    def read(self) -> Loaded:
        """List the source's items now. Raises: IngestError when nothing can be read at all."""
        ...
