"""Python tool directories in freeact's layout, read with :mod:`ast` only (never imported).

Layout::

    <root>/mcptools/<category>/<tool>.py          a module with a run() function
    <root>/gentools/<category>/<tool>/api.py      a package; run() in api.py or __init__.py

``root`` may also be the ``mcptools`` / ``gentools`` folder itself, or any folder laid out as
``<category>/<tool>.py`` (its own name is then the kind). Each tool's description is the full
docstring of ``run()``; its input schema comes from ``run()``'s parameters, or from the fields of
the class its single parameter is annotated with (freeact's generated ``Params`` models).
Id: ``<kind>:<category>:<tool>``.

Files and folders starting with ``_`` are private and skipped silently. A tool file without
``run()``, a ``run()`` without a docstring, a syntax error, binary junk or a file over
:data:`MAX_FILE_BYTES` is reported as a :class:`Problem` and skipped.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from toolscout.errors import IngestError
from toolscout.ingest.sources import Loaded
from toolscout.models import JSON, Problem, Tool

KINDS = ("mcptools", "gentools")
MAX_FILE_BYTES = 1024 * 1024
PACKAGE_ENTRY_FILES = ("api.py", "__init__.py")
SOURCE_PREFIX = "tools:"

_SIMPLE_TYPES = {
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "list": "array",
    "dict": "object",
    "List": "array",
    "Dict": "object",
    "Sequence": "array",
    "Mapping": "object",
}


class _Skip(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _json_type(annotation: ast.expr | None) -> str | None:
    if annotation is None:
        return None
    node = annotation
    if isinstance(node, ast.Subscript):  # list[str], Optional[int]
        node = node.value
    if isinstance(node, ast.Attribute):
        node = ast.Name(id=node.attr)
    if isinstance(node, ast.Name):
        return _SIMPLE_TYPES.get(node.id)
    return None


def _field_description(value: ast.expr | None) -> str | None:
    """``Field(description="...")`` on a model attribute, or None."""
    if not isinstance(value, ast.Call):
        return None
    for kw in value.keywords:
        if (
            kw.arg == "description"
            and isinstance(kw.value, ast.Constant)
            and isinstance(kw.value.value, str)
        ):
            return kw.value.value
    return None


def _class_schema(cls: ast.ClassDef) -> JSON:
    props: dict[str, Any] = {}
    required: list[str] = []
    for stmt in cls.body:
        if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
            continue
        name = stmt.target.id
        if name.startswith("_") or name == "model_config":
            continue
        prop: dict[str, Any] = {}
        json_type = _json_type(stmt.annotation)
        if json_type:
            prop["type"] = json_type
        desc = _field_description(stmt.value)
        if desc:
            prop["description"] = desc
        props[name] = prop
        if stmt.value is None:
            required.append(name)
    return {"type": "object", "properties": props, "required": required}


def _input_schema(run: ast.FunctionDef | ast.AsyncFunctionDef, module: ast.Module) -> JSON:
    params = [a for a in run.args.posonlyargs + run.args.args + run.args.kwonlyargs]
    params = [a for a in params if a.arg not in ("self", "cls")]
    classes = {n.name: n for n in module.body if isinstance(n, ast.ClassDef)}
    if len(params) == 1 and isinstance(params[0].annotation, ast.Name):
        model = classes.get(params[0].annotation.id)
        if model is not None:
            return _class_schema(model)
    props: dict[str, Any] = {}
    for arg in params:
        json_type = _json_type(arg.annotation)
        props[arg.arg] = {"type": json_type} if json_type else {}
    positional = run.args.posonlyargs + run.args.args
    defaults_from = len(positional) - len(run.args.defaults)
    required = [a.arg for i, a in enumerate(positional) if i < defaults_from and a in params]
    required += [
        a.arg for a, d in zip(run.args.kwonlyargs, run.args.kw_defaults, strict=True) if d is None
    ]
    return {"type": "object", "properties": props, "required": required}


def parse_tool_file(path: Path) -> tuple[str, JSON]:
    """The ``run()`` docstring and input schema of one tool file, without importing it.

    Raises:
        _Skip: naming why the file is not a usable tool (size, encoding, syntax, no run()).
    """
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
    run = next(
        (
            n
            for n in module.body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == "run"
        ),
        None,
    )
    if run is None:
        raise _Skip("run", "no top-level run() function; a tool module must define one")
    doc = ast.get_docstring(run, clean=True)
    if not doc or not doc.strip():
        raise _Skip("run.__doc__", "run() has no docstring; describe the tool there")
    return doc.strip(), _input_schema(run, module)


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
        try:
            if file is None:
                raise _Skip("(package)", f"no {' or '.join(PACKAGE_ENTRY_FILES)} with run()")
            description, schema = parse_tool_file(file)
        except _Skip as exc:
            loaded.problems.append(Problem(str(file or where), exc.field, str(exc)))
            return
        loaded.tools.append(
            Tool(
                id=f"{kind}:{category}:{tool_name}",
                name=tool_name,
                description=description,
                input_schema=schema,
                source=self.name,
                category=category,
                annotations={"path": str(file)},
            )
        )
