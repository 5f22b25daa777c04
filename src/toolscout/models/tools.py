"""Tools and what indexing reports: the tool record, its content hash, load problems."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

JSON = dict[str, Any]
#: Input schemas of tool ids, read from a store (``Store.schemas``).
SchemaLoader = Callable[[Sequence[str]], Mapping[str, JSON | None]]


class ItemType(StrEnum):
    """What an indexed item is: MCP servers expose tools, prompts and resources."""

    TOOL = "tool"
    PROMPT = "prompt"
    RESOURCE = "resource"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def content_hash(
    name: str,
    description: str,
    input_schema: JSON | None,
    output_schema: JSON | None,
    annotations: JSON,
    item_type: ItemType,
) -> str:
    """SHA-256 over everything that defines what a tool does (not where it comes from)."""
    payload = _canonical(
        {
            "name": name,
            "description": description,
            "input_schema": input_schema,
            "output_schema": output_schema,
            "annotations": annotations,
            "item_type": item_type.value,
        }
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Tool:
    """One indexed item: an MCP tool, prompt or resource, a Python tool, or a function definition.

    ``content_hash`` is derived from the defining fields; two tools with equal hashes need no
    re-embedding.
    """

    id: str
    name: str
    description: str = ""
    input_schema: JSON | None = None
    output_schema: JSON | None = None
    annotations: JSON = field(default_factory=dict)
    item_type: ItemType = ItemType.TOOL
    server: str | None = None
    source: str | None = None
    category: str | None = None
    content_hash: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        digest = content_hash(
            self.name,
            self.description,
            self.input_schema,
            self.output_schema,
            self.annotations,
            self.item_type,
        )
        object.__setattr__(self, "content_hash", digest)

    @classmethod
    def stored(
        cls,
        content_hash: str,
        *,
        id: str,
        name: str,
        description: str,
        annotations: JSON,
        item_type: ItemType,
        server: str | None,
        source: str | None,
        category: str | None,
        input_schema: JSON | None = None,
        output_schema: JSON | None = None,
    ) -> Tool:
        """A tool read back from a store, carrying the ``content_hash`` it was written with.

        Nothing is validated or hashed again: the row was checked and hashed when it was
        written, and the stored hash still covers the schemas a light read leaves out (hashing
        cost more than the rest of a search's result rows). Build tools from user input with
        the constructor."""
        tool = object.__new__(cls)
        # A frozen dataclass without slots: its fields live in the instance dict.
        tool.__dict__.update(
            id=id,
            name=name,
            description=description,
            input_schema=input_schema,
            output_schema=output_schema,
            annotations=annotations,
            item_type=item_type,
            server=server,
            source=source,
            category=category,
            content_hash=content_hash,
        )
        return tool

    def parameter_names(self) -> list[str]:
        """Top-level parameter names of the input schema, in schema order."""
        props = (self.input_schema or {}).get("properties")
        return list(props) if isinstance(props, dict) else []

    def to_dict(self, *, include_schemas: bool = True) -> JSON:
        """A JSON-ready dict (the wire shape used by the CLI, HTTP and MCP edges)."""
        out: JSON = {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "item_type": self.item_type.value,
            "server": self.server,
            "source": self.source,
            "category": self.category,
            "annotations": self.annotations,
            "content_hash": self.content_hash,
        }
        if include_schemas:
            out["input_schema"] = self.input_schema
            out["output_schema"] = self.output_schema
        return out


@dataclass(frozen=True)
class Problem:
    """A catalog entry that was skipped: where it is and what is wrong with it."""

    location: str
    field: str
    message: str
    #: Skipped on purpose (a provider-run tool with nothing to search), not unreadable: a
    #: prune still deletes what its source no longer lists.
    deliberate: bool = False
    #: The ids an unreadable entry can stand for, when its place alone says (a tool file's
    #: path yields its id): a prune keeps only these. None: it may be any tool of its source,
    #: so a prune keeps them all (a catalog line that does not parse names nothing).
    stands_for: tuple[str, ...] | None = None

    def __str__(self) -> str:
        return f"{self.location}: {self.field}: {self.message}"


@dataclass
class Loaded:
    """What a source produced: the tools it could read and the entries it skipped."""

    source: str
    tools: list[Tool] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


@dataclass
class IndexReport:
    """What an indexing pass did: counts per outcome plus the skipped entries."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    skipped: list[Problem] = field(default_factory=list)
    embedded: int = 0
    #: Indexed all the same, but worth a look (an id that another source had).
    warnings: list[Problem] = field(default_factory=list)

    def to_dict(self) -> JSON:
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "skipped": [str(p) for p in self.skipped],
            "embedded": self.embedded,
            "warnings": [str(p) for p in self.warnings],
        }
