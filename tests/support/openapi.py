"""The operations of an OpenAPI document, as schemathesis reads them, for the fuzz suites."""

from __future__ import annotations

from typing import Any

from schemathesis import APIOperation
from schemathesis.core.result import Err
from schemathesis.schemas import BaseSchema


def operations(schema: BaseSchema) -> list[APIOperation[Any, Any, Any, Any]]:
    """Every operation of ``schema``; one the document does not describe validly raises
    schemathesis's ``InvalidSchema`` (and fails the test)."""
    found = []
    for result in schema.get_all_operations():
        if isinstance(result, Err):
            raise result.err()
        found.append(result.ok())
    return found
