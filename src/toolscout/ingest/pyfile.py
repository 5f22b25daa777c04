"""Python tool directories in freeact's layout, read statically with griffe (never imported).

Layout::

    <root>/mcptools/<category>/<tool>.py          a module with a run() function
    <root>/gentools/<category>/<tool>/api.py      a package; run() in api.py or __init__.py

``root`` may also be the ``mcptools`` / ``gentools`` folder itself, or any folder laid out as
``<category>/<tool>.py`` (its own name is then the kind). Each tool's description is the full
docstring of ``run()`` (``run_parsed()`` when a file has both, as freeact does); its input schema is
the JSON Schema of the ``Params`` model its single parameter is annotated with (freeact's generated
tools), or of ``run()``'s own parameters, built by :mod:`toolscout.ingest.pyschema`.
Id: ``<kind>:<category>:<tool>``.

Files and folders starting with ``_`` are private and skipped silently. A tool file without
``run()``, a ``run()`` without a docstring, a syntax error, binary junk or a file over
:data:`MAX_FILE_BYTES` is reported as a :class:`Problem` and skipped.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import griffe

from toolscout.errors import IngestError
from toolscout.ingest.pyschema import SchemaError, input_schema
from toolscout.models import JSON, Loaded, Problem, Tool

KINDS = ("mcptools", "gentools")
MAX_FILE_BYTES = 1024 * 1024
PACKAGE_ENTRY_FILES = ("api.py", "__init__.py")
SOURCE_PREFIX = "tools:"

ENTRY_FUNCTIONS = ("run_parsed", "run")  # freeact prefers run_parsed when both exist


class _Skip(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def parse_tool_file(path: Path, tool_name: str | None = None) -> tuple[str, JSON]:
    """The ``run()`` docstring and input schema of one tool file, without importing it.

    ``tool_name`` titles a schema built from ``run()``'s parameters (default: the file's stem).

    Raises:
        _Skip: naming why the file is not a usable tool (size, encoding, syntax, no run()).
    """
    tool_name = tool_name or path.stem
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise _Skip("(file)", f"is {size} bytes; tool files over {MAX_FILE_BYTES} are skipped")
        data = path.read_bytes()
    except OSError as exc:
        raise _Skip("(file)", f"cannot read: {exc.strerror or exc}") from exc
    try:
        text = data.decode("utf-8")
        module = ast.parse(text, filename=str(path))
    except UnicodeDecodeError as exc:
        raise _Skip("(file)", f"not UTF-8 text (byte {exc.start})") from exc
    except SyntaxError as exc:
        raise _Skip("(syntax)", f"line {exc.lineno}: {exc.msg}") from exc
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
        raise _Skip("(file)", f"not parseable Python: {type(exc).__name__}") from exc
    del module  # parsed above only to report syntax errors precisely
    try:
        visited = griffe.visit(_module_name(path), filepath=path, code=text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise _Skip("(file)", f"not parseable Python: {type(exc).__name__}") from exc
    run = next(
        (
            member
            for name in ENTRY_FUNCTIONS
            if isinstance(member := visited.members.get(name), griffe.Function)
        ),
        None,
    )
    if run is None:
        raise _Skip("run", "no top-level run() function; a tool module must define one")
    doc = run.docstring.value.strip() if run.docstring else ""
    if not doc:
        raise _Skip(
            f"{run.name}.__doc__", f"{run.name}() has no docstring; describe the tool there"
        )
    try:
        schema = input_schema(visited, run, title=tool_name)
    except SchemaError as exc:
        raise _Skip("(schema)", str(exc)) from exc
    return doc, schema


def _module_name(path: Path) -> str:
    stem = path.parent.name if path.stem in ("api", "__init__") else path.stem
    return stem if stem.isidentifier() else "tool"


def _visible(path: Path) -> bool:
    return not path.name.startswith(("_", "."))


class ToolDirectory:
    """A folder of Python tools as a :class:`~toolscout.ingest.sources.Source`."""

    def __init__(self, root: str | Path, *, source: str | None = None) -> None:
        self.root = Path(root).expanduser().resolve()
        self._name = source or SOURCE_PREFIX + str(self.root)

    @property
    def name(self) -> str:
        return self._name

    def _kinds(self) -> list[tuple[str, Path]]:
        if self.root.name in KINDS:
            return [(self.root.name, self.root)]
        found = [(kind, self.root / kind) for kind in KINDS if (self.root / kind).is_dir()]
        return found or [(self.root.name, self.root)]

    def _candidates(self, kind: str, base: Path) -> Iterator[tuple[str, str, Path | None, Path]]:
        """(category, tool name, tool file or None, where) for every visible tool entry."""
        for category in sorted(p for p in base.iterdir() if p.is_dir() and _visible(p)):
            for entry in sorted(p for p in category.iterdir() if _visible(p)):
                if entry.is_file() and entry.suffix == ".py":
                    yield category.name, entry.stem, entry, entry
                elif entry.is_dir() and kind != "mcptools":
                    files = [entry / f for f in PACKAGE_ENTRY_FILES if (entry / f).is_file()]
                    yield category.name, entry.name, (files[0] if files else None), entry

    def read(self) -> Loaded:
        """Parse every tool file; unusable ones become problems.

        Raises:
            IngestError: the folder does not exist or cannot be listed.
        """
        if not self.root.is_dir():
            raise IngestError(f"{self.root}: not a directory (tools dir)")
        loaded = Loaded(source=self.name)
        try:
            for kind, base in self._kinds():
                for category, tool_name, file, where in self._candidates(kind, base):
                    self._add(loaded, kind, category, tool_name, file, where)
        except OSError as exc:
            raise IngestError(f"{self.root}: cannot list: {exc.strerror or exc}") from exc
        return loaded

    def _add(
        self,
        loaded: Loaded,
        kind: str,
        category: str,
        tool_name: str,
        file: Path | None,
        where: Path,
    ) -> None:
        tool_id = f"{kind}:{category}:{tool_name}"
        try:
            if file is None:
                raise _Skip("(package)", f"no {' or '.join(PACKAGE_ENTRY_FILES)} with run()")
            description, schema = parse_tool_file(file, tool_name)
        except _Skip as exc:
            # The path alone gives the id, so a broken file holds back only its own tool's
            # deletion, not the deletions of every other file in the folder.
            loaded.problems.append(
                Problem(str(file or where), exc.field, str(exc), stands_for=(tool_id,))
            )
            return
        loaded.tools.append(
            Tool(
                id=tool_id,
                name=tool_name,
                description=description,
                input_schema=schema,
                source=self.name,
                category=category,
                annotations={"path": str(file)},
            )
        )
