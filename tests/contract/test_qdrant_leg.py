"""The Qdrant vector leg beyond the shared contract: repair after a gap between the two
writes, the skills collection, collection migration, and the URL and settings errors.

Each test runs on both engines of a local folder: Qdrant Edge (the default) and qdrant-client's
local mode (``engine=client``: the client code path a Qdrant server is reached by). PostgreSQL is
the real server the contract suite starts.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from toolscout.config import Settings, load_settings
from toolscout.errors import ConfigError
from toolscout.models import Filters, Tool
from toolscout.store.base import IndexEntry, IndexIdentity
from toolscout.store.postgres import PostgresStore
from toolscout.store.postgres.vector.qdrant import QdrantVectorLeg, parse_qdrant_url
from toolscout.store.postgres.vector.qdrant.leg import SCHEMA, point_id

pytestmark = pytest.mark.postgres
IDENTITY = IndexIdentity("test-embedder", 8, "a2")


def entry(tool_id: str, axis: int, server: str = "s") -> IndexEntry:
    vector = np.zeros(IDENTITY.dim, dtype=np.float32)
    vector[axis % IDENTITY.dim] = 1.0
    tool = Tool(id=tool_id, name=tool_id, description=f"tool {tool_id}", server=server)
    # The text hash covers what the vector is made from: a new vector comes with a new hash.
    fields = {"name": tool_id, "description": f"tool {tool_id}"}
    return IndexEntry(tool, fields, vector, f"text-{axis}")


@pytest.fixture(params=["edge", "client"])
def open_pair(
    request: pytest.FixtureRequest, pg_url: str, qdrant_vectors: Callable[[Path], str]
) -> Callable[[Path], PostgresStore]:
    """``open_pair(folder)``: the test's PostgreSQL schema with a Qdrant leg, bound."""
    from urllib.parse import urlencode

    def opener(folder: Path) -> PostgresStore:
        url = qdrant_vectors(folder)
        if url.startswith("qdrant+local:") and request.param == "client":
            url += "?engine=client"
        vectors = urlencode({"vectors": url})
        store = PostgresStore(pg_url + ("&" if "?" in pg_url else "?") + vectors)
        store.bind(IDENTITY)
        return store

    return opener


def leg(store: PostgresStore) -> QdrantVectorLeg:
    assert isinstance(store.vector_leg, QdrantVectorLeg)
    return store.vector_leg


def nearest_ids(store: PostgresStore, axis: int, limit: int = 10) -> list[str]:
    query = np.zeros(IDENTITY.dim, dtype=np.float32)
    query[axis] = 1.0
    return [s.id for s in store.nearest(query, limit=limit)]


def test_writes_behind_qdrants_back_are_repaired_by_the_next_write(
    pg_url: str, tmp_path: Path, open_pair: Callable[[Path], PostgresStore]
) -> None:
    folder = tmp_path / "q"
    store = open_pair(folder)
    store.upsert([entry("a", 0), entry("b", 1), entry("c", 2)])
    store.close()
    # The state a crash between the two writes leaves: PostgreSQL moved on, Qdrant did not.
    plain = PostgresStore(pg_url)
    plain.upsert([entry("b", 3), entry("d", 4)])  # b moved, d is new
    plain.delete(["c"])
    plain.close()

    store = open_pair(folder)
    try:
        assert "c" in nearest_ids(store, 2)  # still stale: nothing has written yet
        store.upsert([entry("e", 5)])  # the next sync's first write reconciles
        assert nearest_ids(store, 3)[0] == "b"
        assert nearest_ids(store, 4)[0] == "d"
        assert "c" not in nearest_ids(store, 2)
        assert sorted(nearest_ids(store, 0)) == ["a", "b", "d", "e"]
        assert leg(store).reconcile() == (0, 0)  # nothing left to repair
    finally:
        store.close()


def test_skill_reassignment_moves_the_payload_that_filters_stage_two(
    pg_url: str, tmp_path: Path, open_pair: Callable[[Path], PostgresStore]
) -> None:
    from toolscout.models import Skill, SkillAssignment
    from toolscout.store.roles import Classified

    store = open_pair(tmp_path / "q")
    try:
        store.upsert([entry("a", 0), entry("b", 0)])
        store.skills.insert_skill(Skill(id="mail", name="Mail", description="email"))
        store.skills.insert_skill(Skill(id="cal", name="Calendar", description="calendar"))

        def assign(tool_id: str, skill_id: str) -> Classified:
            return Classified(
                tool_id, "h", "test", (SkillAssignment(tool_id, skill_id, 0.9, True),)
            )

        store.skills.replace_assignments([assign("a", "mail"), assign("b", "cal")])
        query = np.eye(IDENTITY.dim, dtype=np.float32)[0]
        hits = store.nearest(query, limit=5, filters=Filters(skill_ids=("mail",)))
        assert [h.id for h in hits] == ["a"]
        store.skills.replace_assignments([assign("a", "cal")])
        assert store.nearest(query, limit=5, filters=Filters(skill_ids=("mail",))) == []
        both = store.nearest(query, limit=5, filters=Filters(skill_ids=("cal",)))
        assert [h.id for h in both] == ["a", "b"]
    finally:
        store.close()


def test_skill_centroids_are_read_from_the_skills_collection(
    tmp_path: Path, open_pair: Callable[[Path], PostgresStore]
) -> None:
    store = open_pair(tmp_path / "q")
    try:
        centroid = np.eye(IDENTITY.dim, dtype=np.float32)[2]
        store.skills.set_skill_vectors({"mail": centroid})
        engine = leg(store).engine
        name = leg(store).target.skills_collection
        assert len(list(engine.scroll(name, ["skill_id"]))) == 1
        assert np.allclose(store.skills.skill_vectors()["mail"], centroid)
        store.skills.set_skill_vectors({"mail": None})
        assert list(engine.scroll(name, ["skill_id"])) == []
        assert store.skills.skill_vectors() == {}
    finally:
        store.close()


def test_a_collection_of_an_older_layout_is_rebuilt_from_postgresql(
    pg_url: str, tmp_path: Path, open_pair: Callable[[Path], PostgresStore]
) -> None:
    folder = tmp_path / "q"
    store = open_pair(folder)
    store.upsert([entry("a", 0), entry("b", 1)])
    qleg = leg(store)
    name = qleg.target.collection
    qleg.engine.create(name, IDENTITY.dim, schema=SCHEMA - 1, tools=True)  # empty, older
    store.close()
    store = open_pair(folder)  # binding migrates the collection...
    try:
        assert leg(store).engine.layout(name) == (SCHEMA, IDENTITY.dim)
        store.upsert([entry("c", 2)])  # ...and the next write fills it from PostgreSQL
        assert sorted(nearest_ids(store, 0)) == ["a", "b", "c"]
        points = {pid: payload for pid, payload, _ in leg(store).engine.scroll(name, ["tool_id"])}
        assert points[point_id("a")]["tool_id"] == "a"
    finally:
        store.close()


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("redis://h/c", "unknown scheme"),
        ("qdrant://h:6333/", "collection name"),
        ("qdrant://h/c?ef=many", "ef='many'"),
        ("qdrant://h/c?quantization=pq", "quantization"),
        ("qdrant://h/c?colour=1", "unknown option"),
        ("qdrant+local://relative/c", "absolute folder"),
        ("qdrant://h/c?engine=edge", "engine='edge'"),
    ],
)
def test_a_bad_vectors_url_names_what_is_wrong(url: str, named: str) -> None:
    with pytest.raises(ConfigError, match="vectors") as info:
        parse_qdrant_url(url)
    assert named in str(info.value)


def test_server_urls_carry_host_port_tls_and_the_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QDRANT_API_KEY", "k1")
    target = parse_qdrant_url("qdrants://vectors.internal:7000/tools?hnsw_m=32&quantization=none")
    assert (target.host, target.port, target.https, target.api_key) == (
        "vectors.internal",
        7000,
        True,
        "k1",
    )
    assert (target.collection, target.skills_collection) == ("tools", "tools_skills")
    assert (target.hnsw_m, target.quantization) == (32, "none")


def test_vectors_setting_needs_a_postgresql_db_and_rides_on_its_url(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="vectors: a Qdrant vector leg needs a PostgreSQL"):
        load_settings(db=str(tmp_path / "x.db"), vectors="qdrant://h/c")
    settings = Settings(db="postgresql://u@h/db?schema=s", vectors="qdrant://h:6333/c")
    assert "vectors=qdrant%3A%2F%2Fh%3A6333%2Fc" in settings.db
    assert "schema=s" in settings.db
