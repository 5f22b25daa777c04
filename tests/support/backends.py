"""Stores of every backend for the contract suite: a bound store by kind, entries to fill it
(8-dimensional unit vectors, matching ``IDENTITY``), and URL helpers."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
from numpy.typing import NDArray

from toolscout.models import ItemType, Tool
from toolscout.store.base import LEXICAL_FIELDS, IndexEntry, IndexIdentity, Store
from toolscout.store.postgres import PostgresStore
from toolscout.store.sqlite import SQLiteStore

IDENTITY = IndexIdentity("test-embedder", 8, "a2")


def unit(*values: float) -> NDArray[np.float32]:
    v = np.zeros(8, dtype=np.float32)
    v[: len(values)] = values
    return v / np.linalg.norm(v)


def entry(
    tool_id: str,
    words: str,
    vector: NDArray[np.float32],
    *,
    server: str = "files",
    item_type: ItemType = ItemType.TOOL,
    description: str = "",
) -> IndexEntry:
    tool = Tool(
        id=tool_id,
        name=tool_id.split("::")[-1],
        description=description or words,
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
        annotations={"readOnlyHint": True},
        item_type=item_type,
        server=server,
        source=f"src-{server}",
        category="cat",
    )
    fields = {f: "" for f in LEXICAL_FIELDS}
    fields["name"] = tool.name.replace("_", " ")
    fields["description"] = words
    return IndexEntry(tool, fields, vector, text_hash="h-" + words)


def with_options(url: str, **options: object) -> str:
    """``url`` with query options added (replacing any of the same name)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k not in options]
    query += [(k, str(v)) for k, v in options.items()]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), ""))


def qdrant_url(folder: Path) -> str:
    """A Qdrant vector leg: Qdrant Edge (in process, on disk), or a collection
    of its own on the server ``TOOLSCOUT_TEST_QDRANT_URL`` names (``qdrant://host:6333/x``)."""
    server = os.environ.get("TOOLSCOUT_TEST_QDRANT_URL")
    if server:
        return server.rsplit("/", 1)[0] + "/t_" + uuid.uuid4().hex[:12]
    return f"qdrant+local://{folder.resolve()}/tools"


def open_backend(kind: str, tmp_path: Path, pg_url: str | None) -> Store:
    """A new, bound store of ``kind`` (``sqlite``; ``sqlite_ann``: SQLite with its Qdrant Edge
    vector leg answering from the first tool; ``sqlite_lex``: SQLite with its in-memory posting
    index answering the lexical leg from the first tool; ``postgres``; or ``qdrant``:
    PostgreSQL with Qdrant Edge as the vector leg)."""
    store: Store
    if kind == "sqlite":
        store = SQLiteStore("sqlite:///" + str(tmp_path / "contract.db"))
    elif kind == "sqlite_ann":
        store = SQLiteStore("sqlite:///" + str(tmp_path / "contract.db") + "?ann_min_tools=0")
    elif kind == "sqlite_lex":
        store = SQLiteStore("sqlite:///" + str(tmp_path / "contract.db") + "?lex_min_tools=0")
    elif kind == "qdrant":
        assert pg_url is not None
        store = PostgresStore(with_options(pg_url, vectors=qdrant_url(tmp_path / "qdrant")))
    else:
        assert pg_url is not None
        store = PostgresStore(pg_url)
    store.bind(IDENTITY)
    return store
