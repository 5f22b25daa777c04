"""Property-based run of the OpenAPI document (schemathesis + hypothesis): whatever a client
sends, valid or not, every route answers without a 5xx and errors keep the one shape."""

from __future__ import annotations

import re
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from support.openapi import operations as all_operations
from support.served import ADMIN
from toolscout.api.http import create_app
from toolscout.config import Settings
from toolscout.engine import Engine

HEADERS = {"Authorization": f"Bearer {ADMIN}"}  # opens every route: input reaches the engine
METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH")


def _check(case: Any) -> None:
    response = case.call(headers=HEADERS)
    assert response.status_code < 500, (case.method, case.formatted_path, response.text)
    if response.status_code >= 400:
        assert set(response.json()) == {"error"}, response.text


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_generated_request_gets_a_5xx(
    api_engine: Engine, api_settings: Settings, mode: GenerationMode
) -> None:
    # The schema is the app's own document, loaded through the ASGI app like a client would.
    schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(api_engine, api_settings))
    operations = all_operations(schema)
    assert len(operations) >= 15
    exercised = []
    for operation in operations:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            derandomize=True,  # the same examples on every run: CI is reproducible
            max_examples=10,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def run(case: Any) -> None:
            _check(case)

        try:
            run()
        except Unsatisfiable:
            # Only in negative mode: an operation whose every input is valid (a bare string path
            # parameter, no parameters at all) has no invalid request to generate.
            assert mode is GenerationMode.NEGATIVE, operation.label
            continue
        exercised.append(operation.label)
    # Most operations must really have been fuzzed (not skipped as unsatisfiable).
    assert len(exercised) >= (len(operations) if mode is GenerationMode.POSITIVE else 10), exercised


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_every_answer_agrees_with_the_openapi_document(
    api_engine: Engine, api_settings: Settings, mode: GenerationMode
) -> None:
    # Every schemathesis check on each generated request: documented status codes, content
    # types, headers and bodies; schema-valid requests accepted, schema-violating ones refused.
    schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(api_engine, api_settings))
    failures: dict[str, str] = {}
    for operation in all_operations(schema):

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            derandomize=True,  # the same examples on every run: CI is reproducible
            max_examples=10,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def run(case: Any) -> None:
            case.call_and_validate(headers=HEADERS)

        try:
            run()
        except Unsatisfiable:
            assert mode is GenerationMode.NEGATIVE, operation.label
        except BaseException as exc:  # schemathesis's FailureGroup: every distinct failure
            if not isinstance(exc, Exception | BaseExceptionGroup):
                raise
            failures[operation.label] = str(exc)
    assert not failures, "\n\n".join(f"{k}:\n{v}" for k, v in sorted(failures.items()))


def test_a_method_a_path_does_not_serve_is_405_with_every_documented_method_allowed(
    api_engine: Engine, api_settings: Settings
) -> None:
    app = create_app(api_engine, api_settings)
    with TestClient(app, client=("127.0.0.1", 50000)) as client:
        paths = client.get("/openapi.json").json()["paths"]
        checked = 0
        for path in paths:
            url = path.replace("{suggestion_id}", "1").replace("{", "").replace("}", "")
            # Every template the URL fits: /skills/classify is also the skill "classify".
            documented = {
                m.upper()
                for template, item in paths.items()
                if re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", template), url)
                for m in item
            } & set(METHODS)
            for method in sorted(set(METHODS) - documented):
                response = client.request(method, url, headers=HEADERS)
                assert response.status_code == 405, (method, path, response.status_code)
                allowed = {m.strip() for m in response.headers["allow"].split(",")}
                assert allowed - {"HEAD", "OPTIONS"} == documented, (method, path, allowed)
                checked += 1
    assert checked >= 40
