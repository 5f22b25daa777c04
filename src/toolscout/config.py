"""Settings: the only place that reads environment variables and the configuration file.

Sources, highest priority first: explicit arguments, ``TOOLSCOUT_*`` environment variables, the
file named by ``TOOLSCOUT_CONFIG`` (TOML or YAML) or else the default file
(:func:`default_config_file`, if it exists), defaults.
"""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl

import platformdirs
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
    YamlConfigSettingsSource,
)

from toolscout.errors import ConfigError

#: The gateway's limit on one relayed result: 100,000 bytes is about 25,000 tokens, the output
#: Claude Code accepts from one MCP tool call before it cuts the result itself
#: (MAX_MCP_OUTPUT_TOKENS); other clients are stricter.
DEFAULT_MAX_RESULT_BYTES = 100_000


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


class McpServerConfig(BaseModel):
    """One MCP server the operator configured (launch commands come only from here)."""

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None


class ApiConfig(BaseModel):
    """One REST API described by an OpenAPI document (``[apis.NAME]``): indexed by ``sync``
    as tools ``NAME::operationId`` and callable through the gateway. Credentials come from
    environment variables or from the ``secrets_file``, named here and read when the gateway
    starts; they are never stored in the index."""

    model_config = {"extra": "forbid"}

    spec: str = Field(description="the OpenAPI document: a file (JSON or YAML) or an http(s) URL")
    base_url: str | None = Field(
        default=None, description="where calls go (default: the document's servers entry)"
    )
    headers_from_env: dict[str, str] = Field(
        default_factory=dict,
        description="header name -> environment variable holding its value, e.g. "
        "{'X-API-Key' = 'SHOP_API_KEY'}",
    )
    bearer_env: str | None = Field(
        default=None, description="environment variable holding a bearer token (Authorization)"
    )
    headers_from_secrets: dict[str, str] = Field(
        default_factory=dict,
        description="header name -> name of the secret in secrets_file holding its value, e.g. "
        "{'X-API-Key' = 'shop_key'}",
    )
    bearer_secret: str | None = Field(
        default=None, description="name of the secret in secrets_file holding a bearer token"
    )
    timeout: float | None = Field(
        default=None, gt=0, description="seconds a call may take (default: 30)"
    )

    def credentials(self, api: str, secrets: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
        """The credential headers, and for each named variable or secret that is not set, a
        message naming its configuration key and the fix."""
        env: Mapping[str, str] = dict(os.environ)
        wanted = [(h, v, env, f"headers_from_env.{h}") for h, v in self.headers_from_env.items()]
        wanted += [
            (h, v, secrets, f"headers_from_secrets.{h}")
            for h, v in self.headers_from_secrets.items()
        ]
        for kind, name, values in (
            ("env", self.bearer_env, env),
            ("secret", self.bearer_secret, secrets),
        ):
            if name:
                wanted.append(("Authorization", name, values, f"bearer_{kind}"))
        headers: dict[str, str] = {}
        missing: list[str] = []
        for header, name, values, key in wanted:
            value = values.get(name)
            if not value:
                where = "the environment" if values is env else "secrets_file"
                missing.append(
                    f"apis.{api}.{key}: {name!r} is not set in {where}; set it or remove the key"
                )
            else:
                headers[header] = f"Bearer {value}" if key.startswith("bearer_") else value
        return headers, missing


def read_secrets(path: str | Path) -> dict[str, str]:
    """The ``name = "value"`` pairs of a secrets file (TOML, one table of strings).

    On POSIX the file must not be readable by every user (``chmod 600`` it), as for SSH keys.

    Raises:
        ConfigError: the file is missing, unreadable, readable by everyone, not TOML, or holds
            something other than strings (each message names ``secrets_file``).
    """
    file = Path(path).expanduser()
    try:
        mode = file.stat().st_mode
        data = file.read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"secrets_file: cannot read {str(file)!r}: {exc.strerror or exc}"
        ) from exc
    if os.name == "posix" and mode & stat.S_IROTH:
        raise ConfigError(
            f"secrets_file: {str(file)!r} is readable by every user (mode "
            f"{stat.S_IMODE(mode):o}); run chmod 600 on it"
        )
    try:
        table = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(
            f'secrets_file: {str(file)!r} is not TOML ({exc}); write one name = "value" per line'
        ) from exc
    wrong = sorted(k for k, v in table.items() if not isinstance(v, str))
    if wrong:
        raise ConfigError(
            f'secrets_file: {str(file)!r}: {", ".join(wrong)} must be strings (name = "value")'
        )
    return {k: str(v) for k, v in table.items()}


class GatewayServer(BaseModel):
    """Per-upstream limits of the gateway (``[gateway.servers.NAME]``)."""

    model_config = {"extra": "forbid"}

    timeout: float | None = Field(
        default=None, gt=0, description="seconds a call may take (default: the server's timeout)"
    )
    max_concurrency: int | None = Field(default=None, ge=1, le=256)


class GatewaySettings(BaseModel):
    """The gateway: calls forwarded to the upstream MCP servers, its policy and audit log
    (docs/serving.md "Gateway")."""

    model_config = {"extra": "forbid"}

    enabled: bool | None = Field(
        default=None,
        description="serve get_tool_schemas and call_tool (None: when MCP servers are configured)",
    )
    allow: list[str] = Field(
        default_factory=list,
        description="tool id patterns that may be called, e.g. 'time::*' (empty: every tool)",
    )
    deny: list[str] = Field(default_factory=list, description="tool id patterns never called")
    allow_destructive: list[str] = Field(
        default_factory=list,
        description="patterns of tools annotated destructiveHint that may be called",
    )
    read_only: bool = Field(default=False, description="call only tools annotated readOnlyHint")
    audit_log: str | None = Field(default=None, description="JSONL file every call is logged to")
    audit_values: bool = Field(default=False, description="also log argument values")
    expose: int = Field(
        default=16, ge=0, le=256, description="found tools added to the tool list (0: off)"
    )
    expose_tokens: int = Field(
        default=1500,
        ge=0,
        description="tokens the whole tools list may cost with exposed tools (never more than "
        "listing the servers directly)",
    )
    max_concurrency: int = Field(default=8, ge=1, le=256, description="calls at once per server")
    max_result_bytes: int = Field(
        default=DEFAULT_MAX_RESULT_BYTES,
        ge=0,
        description="larger upstream results reach the agent cut down, with a notice (0: no "
        "limit); the default, about 25,000 tokens, suits an agent's context",
    )
    servers: dict[str, GatewayServer] = Field(default_factory=dict)


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
        default=False,
        description="re-score a hybrid search's first 100 candidates with the learned ranker "
        "(search/rank.py); off by default: it does not beat the fusion on every dev set "
        "(docs/BENCHMARKS.md section 16)",
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
