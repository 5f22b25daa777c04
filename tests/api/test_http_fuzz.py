"""Property-based run of the OpenAPI document (schemathesis + hypothesis): whatever a client
sends, valid or not, every route answers without a 5xx and errors keep the one shape."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from support.served import ADMIN
from toolscout.api.http import create_app
from toolscout.config import Settings
from toolscout.engine import Engine

HEADERS = {"Authorization": f"Bearer {ADMIN}"}  # opens every route: input reaches the engine


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
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 15
    exercised = []
    for operation in operations:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
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
