"""Catalog files: JSON or JSONL in the shapes people have today.

* MCP ``tools/list`` / ``prompts/list`` / ``resources/list`` results (``{"tools": [...]}``,
  also wrapped in a JSON-RPC ``{"result": ...}``), with ``inputSchema``.
* OpenAI function tools (``{"type": "function", "function": {...}}``) or bare functions with
  ``parameters``; lists, or ``{"tools": [...]}`` / ``{"functions": [...]}``.
* Anthropic tools (``input_schema``).
* The shared benchmark format: JSONL with ``id``, ``name``, ``description``, ``input_schema``,
  ``server``, ``category``.
* OpenAPI 3.x / Swagger 2.0 documents (a ``.json`` one is recognised by its version field; a
  ``.yaml``/``.yml`` file is always one), read by :mod:`toolscout.ingest.openapi`.

A malformed entry becomes a :class:`Problem` (file, line or index, field) and is skipped. In a
JSONL file every line stands alone: a line that is not UTF-8, not JSON, not an object, nested too
deeply or carrying ``NaN`` costs only that line. A ``.json`` file is one document: if it cannot be
decoded or parsed at all the whole file is an :class:`~toolscout.errors.IngestError`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from toolscout.errors import IngestError
from toolscout.ingest.entries import (
    EntryError,
    ProviderTool,
    finite_float,
    non_finite,
    parse_entry,
)
from toolscout.ingest.openapi import OpenApiSource, document_tools, is_openapi
from toolscout.ingest.openapi_documents import Documents
from toolscout.models import ItemType, Loaded, Problem

_LIST_KEYS = {
    "tools": ItemType.TOOL,
    "functions": ItemType.TOOL,
    "prompts": ItemType.PROMPT,
    "resources": ItemType.RESOURCE,
    "resourceTemplates": ItemType.RESOURCE,
}
MAX_FILE_BYTES = 200 * 1024 * 1024
#: Named explicitly, these are read as OpenAPI documents (a folder is searched for JSON only).
OPENAPI_SUFFIXES = (".yaml", ".yml")


class _Unparsable(ValueError):
    """A document that json cannot turn into values (the message says why)."""


def _parse(text: str) -> Any:
    """Strict JSON: NaN/Infinity become markers that entries reject; nesting too deep for the
    parser's stack is a clear message, not a RecursionError.

    Raises:
        _Unparsable: invalid JSON, or nesting deeper than the parser can follow.
    """
    try:
        return json.loads(text, parse_constant=non_finite, parse_float=finite_float)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise _Unparsable(f"invalid JSON at {where}: {exc.msg}") from exc
    except RecursionError as exc:
        raise _Unparsable("nested too deeply to parse; flatten the structure") from exc


def _entries(doc: Any, where: str) -> Iterator[tuple[str, Any, ItemType, str | None]]:
    """Yield (location, entry, default item type, file-level server) from a parsed JSON doc.

    Raises:
        _Unparsable: the document is neither an object nor a list.
    """
    if isinstance(doc, dict) and isinstance(doc.get("result"), dict):
        doc = doc["result"]  # a raw JSON-RPC response
    if isinstance(doc, list):
        for i, entry in enumerate(doc):
            yield f"{where}[{i}]", entry, ItemType.TOOL, None
        return
    if not isinstance(doc, dict):
        raise _Unparsable(f"expected a JSON object or list, got {type(doc).__name__}")
    server = doc.get("server") if isinstance(doc.get("server"), str) else None
    found = False
    for key, item_type in _LIST_KEYS.items():
        items = doc.get(key)
        if items is None:
            continue
        found = True
        if not isinstance(items, list):
            yield f"{where}.{key}", items, item_type, server  # reported by parse_entry
            continue
        for i, entry in enumerate(items):
            yield f"{where}.{key}[{i}]", entry, item_type, server
    if not found:
        yield where, doc, ItemType.TOOL, None  # a single tool definition


class CatalogFile:
    """A JSON/JSONL catalog file as a :class:`~toolscout.ingest.sources.Source`."""

    def __init__(
        self,
        path: str | Path,
        *,
        server: str | None = None,
        source: str | None = None,
        namespace: str | None = None,
    ):
        self.path = Path(path)
        self.server = server
        # The absolute path: `index ./x.json` and `index /abs/x.json` are one source.
        self._name = source or str(self.path.expanduser().resolve())
        #: Prefix of ids of entries with neither id nor server (default: the file's stem).
        self.namespace = namespace or self.path.stem

    @property
    def name(self) -> str:
        return self._name

    def _bytes(self) -> bytes:
        try:
            size = self.path.stat().st_size
            if size > MAX_FILE_BYTES:
                raise IngestError(f"{self.path}: {size} bytes is over the {MAX_FILE_BYTES} limit")
            return self.path.read_bytes()
        except OSError as exc:
            raise IngestError(f"{self.path}: cannot read: {exc.strerror or exc}") from exc

    def _documents(self) -> Iterator[tuple[str, str | UnicodeDecodeError]]:
        """(location, text) per document; a JSONL line that is not UTF-8 comes as its error.

        Raises:
            IngestError: the file cannot be read, or a .json file is not UTF-8.
        """
        data = self._bytes()
        if self.path.suffix.lower() == ".jsonl":
            for lineno, line in enumerate(data.splitlines(), start=1):
                try:
                    text = line.decode("utf-8-sig" if lineno == 1 else "utf-8")
                except UnicodeDecodeError as exc:
                    yield f"{self.path}:{lineno}", exc
                    continue
                if text.strip():
                    yield f"{self.path}:{lineno}", text
            return
        try:
            yield str(self.path), data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise IngestError(
                f"{self.path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8"
            ) from exc

    def read(self) -> Loaded:
        """Parse every entry; malformed ones become problems.

        Raises:
            IngestError: the file cannot be read, or a .json file is not UTF-8, not valid JSON
                at all, or not an object or list.
        """
        if self.path.suffix.lower() in OPENAPI_SUFFIXES:
            return OpenApiSource(self.path, api=self.server, source=self.name).read()
        loaded = Loaded(source=self.name)
        seen: set[str] = set()
        is_jsonl = self.path.suffix.lower() == ".jsonl"
        for where, raw in self._documents():
            try:
                if isinstance(raw, UnicodeDecodeError):
                    raise _Unparsable(f"not UTF-8 text ({raw.reason} at byte {raw.start})")
                doc = _parse(raw)
                if is_jsonl and not isinstance(doc, dict | list):
                    raise _Unparsable(
                        f"expected a JSON object (one tool per line), got {type(doc).__name__}"
                    )
                if not is_jsonl and is_openapi(doc):
                    documents = Documents(str(self.path))
                    return document_tools(
                        doc, location=where, source=self.name, api=self.server, documents=documents
                    )
                entries = list(_entries(doc, where))
            except _Unparsable as exc:
                if not is_jsonl:
                    raise IngestError(f"{where}: {exc}") from exc
                loaded.problems.append(Problem(where, "(line)", str(exc)))
                continue
            for location, entry, item_type, server in entries:
                self._add(loaded, seen, location, entry, item_type, server)
        return loaded

    def _add(
        self,
        loaded: Loaded,
        seen: set[str],
        location: str,
        entry: Any,
        item_type: ItemType,
        server: str | None,
    ) -> None:
        try:
            tool = parse_entry(
                entry,
                default_type=item_type,
                server=self.server or server,
                source=self.name,
                namespace=self.namespace,
            )
        except ProviderTool as exc:
            loaded.problems.append(Problem(location, exc.field, str(exc), deliberate=True))
            return
        except EntryError as exc:
            loaded.problems.append(Problem(location, exc.field, str(exc)))
            return
        if tool.id in seen:
            loaded.problems.append(
                Problem(location, "id", f"duplicate id {tool.id!r} in this file; kept the first")
            )
            return
        seen.add(tool.id)
        loaded.tools.append(tool)


def load_catalog(path: str | Path, *, server: str | None = None) -> Loaded:
    """Read one catalog file. Raises: IngestError."""
    return CatalogFile(path, server=server).read()


def catalog_files(paths: Sequence[Path], *, missing_ok: bool = False) -> list[Path]:
    """Catalog files named by ``paths``: a folder stands for every ``.json``/``.jsonl`` file
    under it (sorted), a file for itself; with ``missing_ok`` a missing path is kept as it is
    (a sync reports it as a failed source, a watcher waits for it to appear).

    Raises:
        IngestError: a path that does not exist (without ``missing_ok``).
    """
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.suffix in (".json", ".jsonl")))
        elif path.exists() or missing_ok:
            files.append(path)
        else:
            raise IngestError(f"{path}: no such file or directory")
    return files
