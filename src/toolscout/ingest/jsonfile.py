"""Catalog files: JSON or JSONL in the shapes people have today.

* MCP ``tools/list`` / ``prompts/list`` / ``resources/list`` results (``{"tools": [...]}``,
  also wrapped in a JSON-RPC ``{"result": ...}``), with ``inputSchema``.
* OpenAI function tools (``{"type": "function", "function": {...}}``) or bare functions with
  ``parameters``; lists, or ``{"tools": [...]}`` / ``{"functions": [...]}``.
* Anthropic tools (``input_schema``).
* The shared benchmark format: JSONL with ``id``, ``name``, ``description``, ``input_schema``,
  ``server``, ``category``.

A malformed entry becomes a :class:`Problem` (file, line or index, field) and is skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from toolscout.errors import IngestError
from toolscout.ingest.entries import EntryError, parse_entry
from toolscout.ingest.sources import Loaded
from toolscout.models import ItemType, Problem

_LIST_KEYS = {
    "tools": ItemType.TOOL,
    "functions": ItemType.TOOL,
    "prompts": ItemType.PROMPT,
    "resources": ItemType.RESOURCE,
    "resourceTemplates": ItemType.RESOURCE,
}
MAX_FILE_BYTES = 200 * 1024 * 1024


def _entries(doc: Any, where: str) -> Iterator[tuple[str, Any, ItemType, str | None]]:
    """Yield (location, entry, default item type, file-level server) from a parsed JSON doc."""
    if isinstance(doc, dict) and isinstance(doc.get("result"), dict):
        doc = doc["result"]  # a raw JSON-RPC response
    if isinstance(doc, list):
        for i, entry in enumerate(doc):
            yield f"{where}[{i}]", entry, ItemType.TOOL, None
        return
    if not isinstance(doc, dict):
        raise IngestError(f"{where}: expected a JSON object or list, got {type(doc).__name__}")
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

    def _documents(self) -> Iterator[tuple[str, Any]]:
        try:
            size = self.path.stat().st_size
            if size > MAX_FILE_BYTES:
                raise IngestError(f"{self.path}: {size} bytes is over the {MAX_FILE_BYTES} limit")
            text = self.path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise IngestError(
                f"{self.path}: not UTF-8 text ({exc.reason} at byte {exc.start})"
            ) from exc
        except OSError as exc:
            raise IngestError(f"{self.path}: cannot read: {exc.strerror or exc}") from exc
        if self.path.suffix.lower() == ".jsonl":
            for lineno, line in enumerate(text.splitlines(), start=1):
                if line.strip():
                    yield f"{self.path}:{lineno}", line
            return
        yield str(self.path), text

    def read(self) -> Loaded:
        """Parse every entry; malformed ones become problems.

        Raises:
            IngestError: the file cannot be read, or a .json file is not valid JSON at all.
        """
        loaded = Loaded(source=self.name)
        seen: set[str] = set()
        is_jsonl = self.path.suffix.lower() == ".jsonl"
        for where, raw in self._documents():
            try:
                doc = json.loads(raw)
            except json.JSONDecodeError as exc:
                if not is_jsonl:
                    raise IngestError(
                        f"{where}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
                    ) from exc
                loaded.problems.append(Problem(where, "(line)", f"invalid JSON: {exc.msg}"))
                continue
            for location, entry, item_type, server in _entries(doc, where):
                try:
                    tool = parse_entry(
                        entry,
                        default_type=item_type,
                        server=self.server or server,
                        source=self.name,
                        namespace=self.namespace,
                    )
                except EntryError as exc:
                    loaded.problems.append(Problem(location, exc.field, str(exc)))
                    continue
                if tool.id in seen:
                    loaded.problems.append(
                        Problem(
                            location, "id", f"duplicate id {tool.id!r} in this file; kept the first"
                        )
                    )
                    continue
                seen.add(tool.id)
                loaded.tools.append(tool)
        return loaded


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
