"""schemathesis over every route of the OpenAPI document without a key, with a wrong one and with
the read key (the admin key's run is tests/api/test_http_fuzz.py): nothing generated gets a 5xx,
every answer passes schemathesis's checks, every error has the one shape, and without a valid key
nothing but the open routes answers anything but 401/403."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from support.openapi import operations as all_operations
from toolscout.api.http import create_app
from toolscout.config import Settings
from toolscout.engine import Engine

ADMIN, READER = "fault-admin", "fault-reader"
OPEN = {"GET /health", "GET /api/v1/health", "GET /openapi.json", "GET /docs"}
#: The admin key's run is tests/api/test_http_fuzz.py.
KEYS = {"none": None, "wrong": "not-a-key", "read": READER}


@pytest.fixture(scope="module")
def app_engine(tmp_path_factory: pytest.TempPathFactory, vector_cache: Path) -> Any:
    from importlib import resources

    from toolscout.ingest.jsonfile import CatalogFile

    db = tmp_path_factory.mktemp("schema") / "index.db"
    s = Settings(
        db=str(db),
        cache_dir=str(vector_cache),
        api_key=ADMIN,
        read_key=READER,
        allowed_hosts=["testserver"],
    )
    engine = Engine.open(s)
    starter = Path(str(resources.files("toolscout.data").joinpath("starter_catalog.json")))
    engine.index([CatalogFile(starter, source="builtin").read()])
    yield engine, s
    engine.close()


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_every_route_answers_generated_requests_without_a_5xx(
    app_engine: Any, mode: GenerationMode
) -> None:
    engine, s = app_engine
    schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(engine, s))
    operations = all_operations(schema)
    assert len(operations) >= 20
    statuses: dict[str, Counter[int]] = {key: Counter() for key in KEYS}
    check = _checker(statuses)
    for operation in operations:
        label = f"{operation.method.upper()} {operation.path}"

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            derandomize=True,  # the same examples on every run: CI is reproducible
            max_examples=3,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def run(case: Any) -> None:
            check(case)

        try:
            run()
        except Unsatisfiable:
            assert mode is GenerationMode.NEGATIVE, label
    sent = sum(sum(c.values()) for c in statuses.values())
    assert sent >= len(operations) * len(KEYS)
    print(
        f"schemathesis {mode.value}: {sent} requests, "
        + str({k: dict(c) for k, c in statuses.items()})
    )


def _checker(statuses: dict[str, Counter[int]]) -> Callable[[Any], None]:
    def check(case: Any) -> None:
        label = f"{case.operation.method.upper()} {case.operation.path}"
        for key, token in KEYS.items():  # one generated request, sent with each key
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            response = case.call(headers=headers)
            statuses[key][response.status_code] += 1
            # Every schemathesis check: documented status codes, headers and bodies.
            case.validate_response(response, headers=headers)
            assert response.status_code < 500, (label, key, response.text)
            if response.status_code >= 400:
                assert set(response.json()) == {"error"}, response.text
            if token != READER and label not in OPEN:
                assert response.status_code in (401, 403), (label, key, response.status_code)

    return check
