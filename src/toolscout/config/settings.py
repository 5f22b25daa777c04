"""Settings: every top-level setting, where they are read from, and how they are checked.

Sources, highest priority first: explicit arguments, ``TOOLSCOUT_*`` environment variables, the
file named by ``TOOLSCOUT_CONFIG`` (TOML or YAML) or else the default file
(:func:`default_config_file`, if it exists), defaults. The tables for MCP servers, REST APIs and
the gateway are in :mod:`.sections`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl

import platformdirs
from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
    YamlConfigSettingsSource,
)

from toolscout.config.sections import (
    ApiConfig,
    GatewaySettings,
    McpServerConfig,
    read_secrets,
)
from toolscout.errors import ConfigError


def default_db() -> str:
    return str(Path(platformdirs.user_data_dir("toolscout")) / "index.db")


def default_reports_dir() -> str:
    return str(Path(platformdirs.user_data_dir("toolscout")) / "reports")


def default_models_dir() -> str:
    """Where installed models (``toolscout model install quality``) live."""
    return str(Path(platformdirs.user_data_dir("toolscout")) / "models")


def default_cache_dir() -> str:
    return str(Path(platformdirs.user_cache_dir("toolscout")))


def default_config_file() -> Path:
    """Where ``toolscout config init`` writes, and where settings are read from when
    ``TOOLSCOUT_CONFIG`` is not set (e.g. ``~/.config/toolscout/config.toml`` on Linux)."""
    return Path(platformdirs.user_config_dir("toolscout")) / "config.toml"


def config_file() -> Path | None:
    """The configuration file in use: ``TOOLSCOUT_CONFIG``, else the default file if present."""
    named = os.environ.get("TOOLSCOUT_CONFIG")
    if named:
        return Path(named).expanduser()
    default = default_config_file()
    return default if default.is_file() else None


class Settings(BaseSettings):
    """Everything configurable about toolscout."""

    model_config = SettingsConfigDict(env_prefix="TOOLSCOUT_", extra="forbid")

    db: str = Field(default_factory=default_db, description="SQLite path or store URL")
    vectors: str | None = Field(
        default=None,
        description="a Qdrant vector leg for a PostgreSQL db: qdrant://HOST:6333/COLLECTION "
        "(API key from QDRANT_API_KEY) or qdrant+local:///FOLDER/COLLECTION",
    )
    ann_min_tools: int | None = Field(
        default=None,
        ge=0,
        description="embedded SQLite store: from this many tools an HNSW index (Qdrant Edge, "
        "beside the file as <db>.vectors/) answers the vector leg instead of the exact "
        "product (None: the store's default, 20,000; 0: always)",
    )
    lex_min_tools: int | None = Field(
        default=None,
        ge=0,
        description="embedded SQLite store: from this many tools an in-memory posting index "
        "answers the lexical leg (FTS5's bm25() scores, faster on large catalogs) instead of "
        "FTS5 (None: the store's default, 1,000; 0: always)",
    )
    embed_model: str = Field(
        default="local:tool-minilm-l6",
        description="local:tool-minilm-l6 (default, fine-tuned for tools), local:quality "
        "(all-mpnet-base-v2, ~10x the compute; `toolscout model install quality` first), "
        "local:minilm-l6-int8 (stock MiniLM), onnx:PATH (a folder with an ONNX graph + "
        "tokenizer.json) or provider:model for a remote API via pydantic-ai",
    )
    models_dir: str = Field(
        default_factory=default_models_dir,
        description="where `toolscout model install` puts models and local:quality loads them",
    )
    embed_base_url: str | None = None
    embed_api_key: str | None = None
    embed_dim: int | None = None
    embed_threads: int | None = None
    embed_cache: bool = True
    query_encoder: Literal["int8", "exact"] = Field(
        default="int8",
        description="stock local model (local:minilm-l6-int8) only: embed queries with its int8 "
        "re-quantisation (~2.4x faster, same quality; docs/BENCHMARKS.md §4) or with the exact "
        "graph tool texts use; the default model uses one int8 graph for both",
    )
    blas_threads: int | None = Field(
        default=1,
        ge=1,
        description="BLAS threads for exact vector search (1 measured fastest; None: leave as is)",
    )
    query_cache_size: int = Field(default=4096, ge=0, description="query vectors kept (0: off)")
    query_batch: int = Field(
        default=32, ge=1, description="queries embedded together when searches overlap (1: off)"
    )
    search_threads: int | None = Field(
        default=None,
        ge=1,
        le=256,
        description="searches run at once per server process (None: one per core with the "
        "local int8 query encoder, four per core otherwise)",
    )
    result_cache_size: int = Field(
        default=1024, ge=0, description="finished searches kept until the index changes (0: off)"
    )
    cache_dir: str = Field(default_factory=default_cache_dir)
    reports_dir: str = Field(
        default_factory=default_reports_dir,
        description="where `toolscout eval` writes its report files (the web console reads them)",
    )

    fusion: str = "adaptive"
    learned_ranker: bool = Field(
        default=True,
        description="re-score a hybrid search's first 100 candidates with the learned ranker "
        "(search/rank.py; it serves the packaged embedding model with the adaptive fusion, else "
        "the fusion ranks and metadata.ranker_off says why); false: the hand-set adaptive "
        "fusion's order and score map (docs/BENCHMARKS.md section 16 compares them)",
    )
    lexical_weight: float = 1.0
    vector_weight: float = 1.0
    rrf_k: int = 60
    field_weights: list[float] | None = None

    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = None
    llm_timeout: float = 30.0
    llm_retries: int = 2
    llm_concurrency: int = Field(default=4, ge=1, le=64, description="LLM calls at once")
    skills_starter: bool = Field(
        default=True, description="load the starter skill catalog into an index with no skills"
    )

    enrich: Literal["none", "offline", "llm"] = Field(
        default="offline", description="semantic enrichment at index time (docs/BENCHMARKS.md §6)"
    )
    enrich_max_age_days: float = Field(default=7.0, gt=0, description="regenerate older ones")

    feedback: bool = Field(
        default=True,
        description="record which tool was called after which request, and whether it worked, "
        "in the index, and rank those tools higher for similar requests (False: neither)",
    )
    feedback_keep: int = Field(
        default=10_000, ge=0, description="recorded calls kept per index (the oldest go first)"
    )

    api_key: str | None = None
    read_key: str | None = None
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host header names served besides loopback ones and a concrete bind "
        "address (DNS-rebinding guard); '*' allows any",
    )
    max_body_bytes: int = Field(
        default=1024 * 1024, ge=1024, description="largest request body accepted (413 above)"
    )
    search_queue: int = Field(
        default=64,
        ge=0,
        description="searches that may wait for a slot per server process (503 + Retry-After "
        "beyond)",
    )
    search_queue_timeout: float = Field(
        default=5.0, gt=0, description="seconds a search may wait for a slot (503 after)"
    )
    header_timeout: float = Field(
        default=10.0, gt=0, description="seconds a client has to send a request's headers"
    )
    keep_alive_timeout: float = Field(
        default=5.0, gt=0, description="seconds an idle keep-alive connection stays open"
    )
    max_connections: int | None = Field(
        default=2048,
        ge=1,
        description="open connections plus running requests per process (503 beyond)",
    )

    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    mcp_configs: list[str] = Field(default_factory=list)
    tools_dirs: list[str] = Field(default_factory=list)
    catalogs: list[str] = Field(default_factory=list)
    apis: dict[str, ApiConfig] = Field(default_factory=dict)
    secrets_file: str | None = Field(
        default=None,
        description='a TOML file of name = "value" secrets that [apis.NAME] credentials name '
        "(headers_from_secrets, bearer_secret); read when the gateway starts, never stored; "
        "must not be readable by every user",
    )
    gateway: GatewaySettings = Field(default_factory=GatewaySettings)

    @field_validator("fusion")
    @classmethod
    def _fusion(cls, value: str) -> str:
        if value not in ("adaptive", "rrf", "score"):
            raise ValueError("must be one of adaptive, rrf, score")
        return value

    @model_validator(mode="after")
    def _legs_into_db(self) -> Settings:
        """``ann_min_tools`` and ``lex_min_tools`` ride on the SQLite URL as its options of the
        same names."""
        for key, value in (
            ("ann_min_tools", self.ann_min_tools),
            ("lex_min_tools", self.lex_min_tools),
        ):
            if value is None:
                continue
            if "://" in self.db and not self.db.startswith("sqlite:"):
                raise ValueError(
                    f"{key}: the legs of the embedded store need a SQLite db; a PostgreSQL "
                    "store chooses its vector leg with `vectors`"
                )
            path, _, query = self.db.partition("?")
            options = [(k, v) for k, v in parse_qsl(query) if k != key]
            options.append((key, str(value)))
            self.db = path + "?" + "&".join(f"{k}={v}" for k, v in options)
        return self

    @model_validator(mode="after")
    def _secrets_need_a_file(self) -> Settings:
        if self.secrets_file:
            return self
        for name, api in sorted(self.apis.items()):
            if api.headers_from_secrets or api.bearer_secret:
                raise ValueError(
                    f"apis.{name}: names secrets (headers_from_secrets / bearer_secret) but no "
                    'secrets_file is set; set secrets_file = "PATH" (a TOML file of '
                    'name = "value" lines) or use headers_from_env / bearer_env'
                )
        return self

    def secrets(self) -> dict[str, str]:
        """The secrets of ``secrets_file`` (empty when none is set).

        Raises:
            ConfigError: as :func:`read_secrets`.
        """
        return read_secrets(self.secrets_file) if self.secrets_file else {}

    @model_validator(mode="after")
    def _vectors_into_db(self) -> Settings:
        """``vectors`` rides on the PostgreSQL URL as its ``vectors`` option, so every place
        that opens ``db`` gets the same store."""
        if not self.vectors:
            return self
        from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

        parts = urlsplit(self.db)
        if parts.scheme not in ("postgresql", "postgres"):
            raise ValueError(
                "vectors: a Qdrant vector leg needs a PostgreSQL store; set db to "
                "postgresql://... (the embedded SQLite store keeps its vectors itself)"
            )
        query = [(k, v) for k, v in parse_qsl(parts.query) if k != "vectors"]
        query.append(("vectors", self.vectors))
        self.db = urlunsplit((*parts[:3], urlencode(query), parts.fragment))
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        found = config_file()
        if found is not None:
            path = str(found)
            if path.endswith((".yaml", ".yml")):
                sources.append(YamlConfigSettingsSource(settings_cls, yaml_file=path))
            else:
                sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)


def qdrant_api_key() -> str | None:
    """The Qdrant server's API key (``QDRANT_API_KEY``, the variable Qdrant's own tools read);
    kept out of the store URL so that it never lands in logs or ``toolscout info``."""
    return os.environ.get("QDRANT_API_KEY") or None


def load_settings(**overrides: Any) -> Settings:
    """Build Settings; ``None`` overrides are ignored so CLI defaults do not mask env vars.

    Raises:
        ConfigError: naming each invalid field.
    """
    path = config_file()
    if path is not None and not path.is_file():
        raise ConfigError(f"TOOLSCOUT_CONFIG: no such file {str(path)!r}")
    where = f" (arguments, TOOLSCOUT_* variables, {path})" if path else ""
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        details = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f"invalid settings{where}: {details}") from exc
    except (ValueError, OSError) as exc:  # TOML / YAML syntax, unreadable file
        raise ConfigError(f"{path}: cannot read the configuration: {exc}") from exc
