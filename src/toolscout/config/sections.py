"""The tables of the configuration beside the top-level settings: ``[mcp_servers.NAME]``,
``[apis.NAME]`` (with the credentials it names and the secrets file that holds them) and
``[gateway]``. Part of :mod:`toolscout.config`: the API credentials named by variable are read
from the environment here.
"""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, Field

from toolscout.errors import ConfigError

#: The gateway's limit on one relayed result: 100,000 bytes is about 25,000 tokens, the output
#: Claude Code accepts from one MCP tool call before it cuts the result itself
#: (MAX_MCP_OUTPUT_TOKENS); other clients are stricter.
DEFAULT_MAX_RESULT_BYTES = 100_000


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
