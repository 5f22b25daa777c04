"""The pydantic equivalents of a Python tool file's annotations, defaults and classes, built
from griffe's expressions without importing the file (see :mod:`toolscout.ingest.pyschema`
for what is interpreted and what becomes "any value").

:class:`SchemaBuilder` turns an annotation into a type (``type_of``), a default or ``Field(...)``
into a field (``field``), and a model, enum or root class of the file into its pydantic or enum
counterpart (``local_class``), remembering each class it built.
"""

from __future__ import annotations

import ast
import enum
import typing
import warnings
from typing import Annotated, Any, Literal, Optional, Union

import griffe
import pydantic
from pydantic import BaseModel, ConfigDict, Field, RootModel, create_model
from pydantic.fields import FieldInfo

from toolscout.ingest.pytypes import (
    CONFIG_KEYS,
    CONSTRAINED,
    ENUM_BASES,
    FACTORIES,
    FIELD_KEYWORDS,
    MAPPINGS,
    MAX_DEPTH,
    MODEL_BASES,
    SEQUENCES,
    SETS,
    TYPES,
    Opaque,
    constant,
    parse_expr,
)


class SchemaError(ValueError):
    """The file's types cannot be turned into a schema; the message says which and why."""


class SchemaBuilder:
    """Builds pydantic types and models for the annotations and classes of one griffe module."""

    def __init__(self, module: griffe.Module) -> None:
        self.module = module
        self._models: dict[str, Any] = {}
        self._building: set[str] = set()

    # -- names ---------------------------------------------------------------------------
    def canonical(self, node: ast.expr) -> str | None:
        """``typing.Optional`` for ``Optional``, ``t.Optional``...; ``local.X`` for a class
        defined in the file; ``builtins.X`` for other bare names; None for anything else."""
        if isinstance(node, ast.Attribute):
            base = self.canonical(node.value)
            return f"{base.removeprefix('builtins.')}.{node.attr}" if base else None
        if not isinstance(node, ast.Name):
            return None
        name = node.id
        if name in self.module.imports:
            path = self.module.imports[name]
        elif isinstance(self.module.members.get(name), griffe.Class):
            return f"local.{name}"
        else:
            path = f"builtins.{name}"
        path = path.replace("typing_extensions.", "typing.")
        return "builtins.object" if path == "typing.Any" else path

    # -- types ---------------------------------------------------------------------------
    def type_of(self, node: ast.expr, depth: int = 0) -> Any:
        """The pydantic-usable type an annotation expression stands for (Any when unknown)."""
        if depth > MAX_DEPTH:
            return Any
        try:
            return self._type(node, depth + 1)
        except Opaque:
            return Any

    def _type(self, node: ast.expr, depth: int) -> Any:
        if isinstance(node, ast.Constant):
            if node.value is None:
                return type(None)
            if isinstance(node.value, str):  # a forward reference
                return self.type_of(parse_expr(node.value), depth)
            raise Opaque(repr(node.value))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return Union[self.type_of(node.left, depth), self.type_of(node.right, depth)]  # noqa: UP007
        if isinstance(node, ast.Subscript):
            return self._generic(node, depth)
        if isinstance(node, ast.Call):
            return self._constrained(node, depth)
        path = self.canonical(node)
        if path is None:
            raise Opaque(ast.unparse(node))
        if path.startswith("local."):
            return self.local_class(path.removeprefix("local."), depth)
        if path in TYPES:
            return TYPES[path]
        raise Opaque(path)

    def _args(self, node: ast.Subscript) -> list[ast.expr]:
        inner = node.slice
        return list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]

    def _generic(self, node: ast.Subscript, depth: int) -> Any:
        path = self.canonical(node.value) or ""
        args = self._args(node)
        types = [self.type_of(a, depth) for a in args] if path != "typing.Literal" else []
        if path == "typing.Optional" and len(types) == 1:
            return Optional[types[0]]  # noqa: UP045
        if path == "typing.Union":
            return Union[tuple(types)]  # noqa: UP007
        if path == "typing.Literal":
            values = tuple(self._literal_value(a) for a in args)
            return Literal[values]
        if path == "typing.Annotated":
            meta = [self._metadata(a, depth) for a in args[1:]]
            kept = [m for m in meta if m is not None]
            return Annotated[tuple([types[0], *kept])] if kept else types[0]
        return _container(path, args, types)

    def _literal_value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Attribute):  # Literal[Color.RED]
            return self.enum_member(node)
        return constant(node)

    def enum_member(self, node: ast.Attribute) -> Any:
        path = self.canonical(node.value) or ""
        if path.startswith("local."):
            found = self.local_class(path.removeprefix("local."), 1)
            if isinstance(found, type) and issubclass(found, enum.Enum):
                return found[node.attr]
        raise Opaque(ast.unparse(node))

    def _keywords(self, call: ast.Call) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        for kw in call.keywords:
            if kw.arg is None or kw.arg not in FIELD_KEYWORDS | {"default_factory"}:
                continue
            if kw.arg == "default_factory":
                factory = FACTORIES.get(self.canonical(kw.value) or "", _computed)
                kwargs["default_factory"] = factory
            elif kw.arg == "item_type":
                kwargs["item_type"] = self.type_of(kw.value)
            else:
                try:
                    kwargs[kw.arg] = self._value(kw.value)
                except Opaque:
                    continue
        return kwargs

    def _value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Attribute):
            return self.enum_member(node)
        return constant(node)

    def _constrained(self, call: ast.Call, depth: int) -> Any:
        path = self.canonical(call.func) or ""
        name = path.removeprefix("pydantic.")
        if name not in CONSTRAINED or not path.startswith("pydantic."):
            raise Opaque(path)
        kwargs = self._keywords(call)
        kwargs.pop("default", None)
        if name in ("conlist", "conset"):
            item = call.args[0] if call.args else None
            kwargs.setdefault("item_type", self.type_of(item, depth) if item else Any)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return getattr(pydantic, name)(**kwargs)
            except (TypeError, ValueError) as exc:
                raise Opaque(ast.unparse(call)) from exc

    def _metadata(self, node: ast.expr, depth: int) -> Any:
        """``Annotated`` metadata: a ``Field(...)`` becomes a FieldInfo; the rest is dropped."""
        if isinstance(node, ast.Call) and self.canonical(node.func) == "pydantic.Field":
            return self.field(node, None)[1]
        return None

    # -- fields --------------------------------------------------------------------------
    def field(self, value: ast.expr | None, description: str | None) -> tuple[bool, FieldInfo]:
        """(required, FieldInfo) for a field whose value expression is ``value``."""
        described: dict[str, Any] = {"description": description} if description else {}
        if value is None:
            return True, Field(**described)
        if isinstance(value, ast.Call) and self.canonical(value.func) == "pydantic.Field":
            kwargs = self._keywords(value)
            if value.args:
                _set_default(kwargs, self._positional_default(value.args[0]))
            elif "default" not in kwargs and _has_keyword(value, "default"):
                kwargs["default_factory"] = _computed
            required = "default" not in kwargs and "default_factory" not in kwargs
            if kwargs.get("default", None) is ...:
                kwargs.pop("default")
                required = True
            if description and not kwargs.get("description"):
                kwargs["description"] = description
            return required, Field(**kwargs)
        kwargs = dict(described)
        _set_default(kwargs, self._positional_default(value))
        return False, Field(**kwargs)

    def _positional_default(self, node: ast.expr) -> Any:
        try:
            return self._value(node)
        except Opaque:
            return _computed

    # -- classes -------------------------------------------------------------------------
    def local_class(self, name: str, depth: int) -> Any:
        """The model, enum or root type a class of the file stands for (cycles become Any)."""
        if name in self._models:
            return self._models[name]
        if name in self._building or depth > MAX_DEPTH:
            return Any
        cls = self.module.members.get(name)
        if not isinstance(cls, griffe.Class):
            return Any
        self._building.add(name)
        try:
            built = self._class(cls, depth)
        finally:
            self._building.discard(name)
        self._models[name] = built
        return built

    def _class(self, cls: griffe.Class, depth: int) -> Any:
        bases = [parse_expr(b) for b in cls.bases]
        paths = [self.canonical(b.value if isinstance(b, ast.Subscript) else b) for b in bases]
        if any(p in ENUM_BASES for p in paths):
            return self._enum(cls, paths)
        for base, path in zip(bases, paths, strict=True):
            if path == "pydantic.RootModel" and isinstance(base, ast.Subscript):
                root = self.type_of(base.slice, depth)
                return type(cls.name, (RootModel[root],), {"__doc__": _doc(cls)})  # type: ignore[valid-type]
        parent: type[BaseModel] | None = None
        for path in paths:
            if path in MODEL_BASES:
                parent = parent or BaseModel
            elif path and path.startswith("local."):
                found = self.local_class(path.removeprefix("local."), depth)
                if isinstance(found, type) and issubclass(found, BaseModel):
                    parent = found
        if parent is None:
            return Any
        return self._model(cls, parent, depth)

    def _enum(self, cls: griffe.Class, paths: list[str | None]) -> Any:
        members: list[tuple[str, Any]] = []
        for name, attr in cls.members.items():
            if isinstance(attr, griffe.Attribute) and attr.value is not None:
                try:
                    members.append((name, constant(parse_expr(attr.value))))
                except Opaque:
                    continue
        if not members:
            return Any
        mixin: Any = str if any(p in ("builtins.str", "enum.StrEnum") for p in paths) else None
        if mixin is None and any(p == "enum.IntEnum" or p == "builtins.int" for p in paths):
            mixin = int
        return enum.Enum(cls.name, members, type=mixin)

    def _config(self, cls: griffe.Class) -> ConfigDict:
        attr = cls.members.get("model_config")
        config = ConfigDict()
        if not isinstance(attr, griffe.Attribute) or attr.value is None:
            return config
        node = parse_expr(attr.value)
        if isinstance(node, ast.Call) and self.canonical(node.func) == "pydantic.ConfigDict":
            for kw in node.keywords:
                if kw.arg in CONFIG_KEYS:
                    try:
                        config[kw.arg] = constant(kw.value)  # type: ignore[literal-required]
                    except Opaque:
                        continue
        return config

    def _model(self, cls: griffe.Class, parent: type[BaseModel], depth: int) -> Any:
        fields: dict[str, Any] = {}
        for name, attr in cls.members.items():
            if not isinstance(attr, griffe.Attribute) or attr.annotation is None:
                continue
            if name.startswith("_") or name == "model_config" or _in_method(cls, attr):
                continue
            annotation = parse_expr(attr.annotation)
            if self.canonical(annotation) == "typing.ClassVar" or (
                isinstance(annotation, ast.Subscript)
                and self.canonical(annotation.value) == "typing.ClassVar"
            ):
                continue
            value = parse_expr(attr.value) if attr.value is not None else None
            doc = attr.docstring.value.strip() if attr.docstring else None
            fields[name] = self._field_spec(annotation, value, doc, depth)
        return self.create(cls.name, parent, fields, self._config(cls), _doc(cls))

    def _field_spec(
        self, annotation: ast.expr, value: ast.expr | None, doc: str | None, depth: int
    ) -> tuple[Any, FieldInfo]:
        typ = self.type_of(annotation, depth)
        if doc and _described(typ):
            doc = None  # Annotated[..., Field(description=...)] already has one
        return typ, self.field(value, doc)[1]

    def create(
        self,
        name: str,
        parent: type[BaseModel],
        fields: dict[str, Any],
        config: ConfigDict | None = None,
        doc: str | None = None,
    ) -> type[BaseModel]:
        """A model named ``name`` with ``fields`` (``{name: (type, FieldInfo)}``).

        Raises:
            SchemaError: pydantic refused it (the message names the model).
        """
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. a field shadowing a BaseModel attribute
            try:
                if config and parent is BaseModel:
                    return create_model(name, __config__=config, __doc__=doc, **fields)
                return create_model(name, __base__=parent, __doc__=doc, **fields)
            except (TypeError, ValueError, NameError, AttributeError) as exc:
                raise SchemaError(f"model {name}: {exc}") from exc


def _computed() -> None:
    """Stands for a default the file computes at run time: the field is optional, and the
    schema shows no default (as for any ``default_factory``)."""


def _set_default(kwargs: dict[str, Any], default: Any) -> None:
    if default is _computed:
        kwargs["default_factory"] = _computed
    else:
        kwargs["default"] = default


def _has_keyword(call: ast.Call, name: str) -> bool:
    return any(kw.arg == name for kw in call.keywords)


def _in_method(cls: griffe.Class, attr: griffe.Attribute) -> bool:
    """``self.x: int = ...`` inside a method is not a field."""
    return any(
        isinstance(f, griffe.Function)
        and f.lineno is not None
        and f.endlineno is not None
        and attr.lineno is not None
        and f.lineno <= attr.lineno <= f.endlineno
        for f in cls.members.values()
    )


def _doc(obj: griffe.Object) -> str | None:
    return obj.docstring.value.strip() if obj.docstring else None


def _described(typ: Any) -> bool:
    if typing.get_origin(typ) is not Annotated:
        return False
    return any(isinstance(m, FieldInfo) and m.description for m in typing.get_args(typ)[1:])


def _container(path: str, args: list[ast.expr], types: list[Any]) -> Any:
    """``list[X]``, ``set[X]``, ``dict[K, V]``, ``tuple[...]`` and plain aliases by their
    canonical path. Raises: Opaque for anything else."""
    if path in SEQUENCES and len(types) == 1:
        return list[types[0]]  # type: ignore[valid-type]
    if path in SETS and len(types) == 1:
        return set[types[0]]  # type: ignore[valid-type]
    if path in MAPPINGS and len(types) == 2:
        return dict[types[0], types[1]]  # type: ignore[valid-type]
    if path in ("builtins.tuple", "typing.Tuple"):
        if len(args) == 2 and isinstance(args[1], ast.Constant) and args[1].value is ...:
            return tuple[types[0], ...]  # type: ignore[valid-type]
        return tuple[tuple(types)]  # type: ignore[misc]
    if path in TYPES:
        return TYPES[path]
    raise Opaque(path)
