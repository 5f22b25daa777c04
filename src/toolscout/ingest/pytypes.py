"""The whitelist of names a tool file's annotations may use, and safe readers of expressions.

:mod:`toolscout.ingest.pymodels` interprets an annotation only through these tables: a name is
looked up here by its canonical path (``typing.Optional``, ``pydantic.conint``...), and a value
is read with :func:`ast.literal_eval`. Nothing else from a tool file becomes a Python object.
"""

from __future__ import annotations

import ast
import datetime
import decimal
import uuid
from typing import Any

import griffe
import pydantic

#: Canonical names that stand for plain types.
TYPES: dict[str, Any] = {
    "builtins.str": str,
    "builtins.int": int,
    "builtins.float": float,
    "builtins.bool": bool,
    "builtins.bytes": bytes,
    "builtins.list": list,
    "builtins.dict": dict,
    "builtins.set": set,
    "builtins.frozenset": frozenset,
    "builtins.tuple": tuple,
    "builtins.object": Any,
    "typing.Any": Any,
    "typing.List": list,
    "typing.Dict": dict,
    "typing.Set": set,
    "typing.Tuple": tuple,
    "typing.Sequence": list,
    "typing.Mapping": dict,
    "collections.abc.Sequence": list,
    "collections.abc.Mapping": dict,
    "datetime.datetime": datetime.datetime,
    "datetime.date": datetime.date,
    "datetime.time": datetime.time,
    "datetime.timedelta": datetime.timedelta,
    "uuid.UUID": uuid.UUID,
    "decimal.Decimal": decimal.Decimal,
}
PYDANTIC_TYPES = (
    "AnyUrl",
    "AnyHttpUrl",
    "HttpUrl",
    "FileUrl",
    "StrictStr",
    "StrictInt",
    "StrictFloat",
    "StrictBool",
    "PositiveInt",
    "NegativeInt",
    "NonNegativeInt",
    "NonPositiveInt",
    "PositiveFloat",
    "NegativeFloat",
    "NonNegativeFloat",
    "NonPositiveFloat",
    "Json",
)
TYPES.update({f"pydantic.{n}": getattr(pydantic, n) for n in PYDANTIC_TYPES})
SEQUENCES = {"builtins.list", "typing.List", "typing.Sequence", "collections.abc.Sequence"}
SETS = {"builtins.set", "builtins.frozenset", "typing.Set", "typing.FrozenSet"}
MAPPINGS = {"builtins.dict", "typing.Dict", "typing.Mapping", "collections.abc.Mapping"}
CONSTRAINED = ("conint", "confloat", "constr", "conlist", "conset", "condecimal", "conbytes")
#: Keyword arguments of ``Field`` (and of the constrained types) that carry constants.
FIELD_KEYWORDS = frozenset(
    {
        "default",
        "alias",
        "title",
        "description",
        "examples",
        "gt",
        "ge",
        "lt",
        "le",
        "multiple_of",
        "min_length",
        "max_length",
        "pattern",
        "strict",
        "deprecated",
        "json_schema_extra",
        "max_digits",
        "decimal_places",
        "allow_inf_nan",
        "item_type",
        "strip_whitespace",
        "to_lower",
        "to_upper",
    }
)
FACTORIES: dict[str, Any] = {
    "builtins.list": list,
    "builtins.dict": dict,
    "builtins.set": set,
    "builtins.tuple": tuple,
}
MODEL_BASES = {"pydantic.BaseModel", "pydantic.main.BaseModel"}
ENUM_BASES = {"enum.Enum", "enum.IntEnum", "enum.StrEnum"}
CONFIG_KEYS = frozenset({"extra", "title", "use_enum_values", "json_schema_extra"})
MAX_DEPTH = 32


class Opaque(ValueError):
    """An expression outside the whitelist (a call, an unknown name...)."""


def parse_expr(expr: str | griffe.Expr) -> ast.expr:
    try:
        return ast.parse(str(expr).strip(), mode="eval").body
    except SyntaxError as exc:
        raise Opaque(str(expr)) from exc


def constant(node: ast.expr) -> Any:
    """A literal constant (numbers, strings, tuples, lists, dicts, None, ...)."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        raise Opaque(ast.unparse(node)) from exc
