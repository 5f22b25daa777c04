"""Fixtures of the fault suite: a seeded random source, the writer pool, and an index built from
the first catalog version with the second version in place for the runs to apply."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.fault_catalogs import content_hashes, versions, write
from support.fault_integrity import check
from support.fault_setup import CATALOG_SIZE, SEED, Scene, WriterPool


@pytest.fixture(scope="session")
def writer_pool(vector_cache: Path) -> Iterator[WriterPool]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSCOUT_")}
    env["TOOLSCOUT_CACHE_DIR"] = str(vector_cache)
    pool = WriterPool(env)
    yield pool
    pool.close()


@pytest.fixture(scope="session")
def scene(tmp_path_factory: pytest.TempPathFactory, writer_pool: WriterPool) -> Scene:
    root = tmp_path_factory.mktemp("faults")
    first, second = versions(SEED, CATALOG_SIZE)
    catalogs = write(root / "catalogs", first)
    v1 = content_hashes(catalogs)
    base = root / "base.db"
    (done,) = writer_pool.run(
        {"op": "index", "db": str(base), "catalogs": [str(p) for p in catalogs]}
    )
    assert not done["killed"] and done["report"]["added"] == len(v1)
    before = check(base)
    assert before.tools == v1 and before.classified == set(v1)
    write(root / "catalogs", second)  # the same paths (sources) now list version 2
    return Scene(base, catalogs, v1, content_hashes(catalogs), before)


@pytest.fixture
def rng() -> random.Random:
    return random.Random(SEED)
