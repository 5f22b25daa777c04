"""Input schemas of Python tool files, derived statically: griffe reads, pydantic writes.

griffe visits the module without importing it and hands over each annotation, default and
docstring as an expression. :mod:`toolscout.ingest.pymodels` turns those expressions into
equivalent pydantic types, and pydantic turns the result into the JSON Schema the file's own
``Params`` model would produce at run time. Nothing from the file is executed: an expression is
interpreted only when it is built from the whitelisted names of :mod:`toolscout.ingest.pytypes`
(builtins, ``typing``, pydantic's constrained types and ``Field``, ``enum``) and literal
constants, or names a model or enum class defined in the same file. Anything else becomes "any
value" (``{}``) rather than a guess.

Descriptions come from, in order: ``Field(description=...)`` (also inside ``Annotated``), the
attribute docstring under a field (what datamodel-code-generator writes for freeact's
``mcptools``), and the ``Args:`` section of a Google-style docstring.
"""

from __future__ import annotations

import warnings
from typing import Any

import griffe
import pydantic
from pydantic import BaseModel

from toolscout.ingest.pymodels import SchemaBuilder, SchemaError
from toolscout.ingest.pytypes import parse_expr
from toolscout.models import JSON

__all__ = ["SchemaError", "input_schema"]


def input_schema(module: griffe.Module, func: griffe.Function, title: str) -> JSON:
    """The JSON Schema of ``func``'s input: its ``Params`` model's, or its parameters'.

    Raises:
        SchemaError: pydantic refused the equivalent model (the message names it).
    """
    builder = SchemaBuilder(module)
    model = _params_model(builder, func) or _function_model(builder, func, title)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return model.model_json_schema()
    except (TypeError, ValueError, pydantic.PydanticUserError) as exc:
        raise SchemaError(f"{model.__name__}: {exc}") from exc


def _function_model(builder: SchemaBuilder, func: griffe.Function, title: str) -> type[BaseModel]:
    """A model of ``func``'s parameters; descriptions from its ``Args:`` section."""
    described = _arg_docs(func)
    fields: dict[str, Any] = {}
    for param in func.parameters:
        if param.name in ("self", "cls") or param.kind in (
            griffe.ParameterKind.var_positional,
            griffe.ParameterKind.var_keyword,
        ):
            continue
        doc_type, doc = described.get(param.name, (None, None))
        annotation = param.annotation if param.annotation is not None else doc_type
        typ = builder.type_of(parse_expr(annotation)) if annotation is not None else Any
        value = parse_expr(param.default) if param.default is not None else None
        fields[param.name] = (typ, builder.field(value, doc)[1])
    return builder.create(title, BaseModel, fields)


def _params_model(builder: SchemaBuilder, func: griffe.Function) -> type[BaseModel] | None:
    """The model class ``func``'s single parameter is annotated with, if the file defines
    one (freeact's ``run(params: Params)``)."""
    params = [p for p in func.parameters if p.name not in ("self", "cls")]
    if len(params) != 1 or params[0].annotation is None:
        return None
    path = builder.canonical(parse_expr(params[0].annotation)) or ""
    if not path.startswith("local."):
        return None
    found = builder.local_class(path.removeprefix("local."), 0)
    return found if isinstance(found, type) and issubclass(found, BaseModel) else None


def _arg_docs(func: griffe.Function) -> dict[str, tuple[str | None, str | None]]:
    """name -> (annotation written in the docstring, description) from ``Args:``."""
    if func.docstring is None:
        return {}
    out: dict[str, tuple[str | None, str | None]] = {}
    for section in griffe.parse_google(func.docstring, warnings=False):
        if isinstance(section, griffe.DocstringSectionParameters):
            for item in section.value:
                annotation = str(item.annotation) if item.annotation else None
                out[item.name] = (annotation, item.description.strip() or None)
    return out
