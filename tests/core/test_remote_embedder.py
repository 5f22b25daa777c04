"""The remote-embedding path (pydantic-ai over an OpenAI-compatible API) against the local test
double in tests/support/openai_double.py — the one allowed stand-in."""

import json
from pathlib import Path

import pytest

from support.openai_double import OpenAIDouble
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.errors import ConfigError
from toolscout.ingest.jsonfile import CatalogFile


def test_an_openai_compatible_embeddings_api_can_replace_the_local_model(
    tmp_path: Path, vector_cache: Path
) -> None:
    catalog = tmp_path / "c.json"
    entries = [
        {"name": "send_email", "description": "Send an email message"},
        {"name": "zip", "description": "Pack files"},
    ]
    catalog.write_text(json.dumps(entries), encoding="utf-8")
    db = str(tmp_path / "remote.db")
    with OpenAIDouble() as double:
        settings = Settings(
            db=db,
            cache_dir=str(vector_cache),
            embed_model="openai:double-embed",
            embed_base_url=double.base_url,
            embed_api_key="test-key",
            embed_dim=8,
            enrich="none",
        )
        engine = Engine.open(settings)
        try:
            report = engine.index([CatalogFile(catalog).read()])
            assert report.embedded == 2
            ident = engine.store.identity()
            assert ident is not None and (ident.embedder, ident.dim) == ("openai:double-embed", 8)
            hits = engine.search("zip", mode="vector").hits
            assert {h.tool.name for h in hits} == {"send_email", "zip"}
        finally:
            engine.close()
    with pytest.raises(ConfigError, match="rebuild"):
        Engine.open(Settings(db=db, cache_dir=str(vector_cache)))
