"""Where the catalog's tools come from, as the console shows it: MCP servers, REST APIs
(``[apis.NAME]``: their document, base URL and which credentials they use, by name only) and
each source's kind.

A source's kind is read from its name: ``mcp:`` and ``tools:`` prefixes for MCP servers and
Python tool folders, a URL or a configured API's document for an OpenAPI source, ``builtin``
for the starter catalog, anything else a catalog file.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolscout.config import Settings
from toolscout.config.sections import ApiConfig
from toolscout.ingest.mcp import SOURCE_PREFIX as MCP_PREFIX
from toolscout.ingest.openapi import OpenApiSource
from toolscout.ingest.openapi_documents import is_url
from toolscout.ingest.pyfile import SOURCE_PREFIX as TOOLS_PREFIX
from toolscout.store.synclog import Inventory, SourceRecord


@dataclass(frozen=True)
class RestApi:
    """One configured REST API with what the index holds of it."""

    name: str
    tools: int
    spec: str
    base_url: str | None
    credentials: tuple[str, ...]
    record: SourceRecord | None


def _credentials(api: ApiConfig) -> tuple[str, ...]:
    """Which header comes from where, e.g. ``X-API-Key from environment SHOP_KEY``."""
    named = [f"{h} from environment {v}" for h, v in sorted(api.headers_from_env.items())]
    named += [f"{h} from secret {v}" for h, v in sorted(api.headers_from_secrets.items())]
    if api.bearer_env:
        named.append(f"bearer token from environment {api.bearer_env}")
    if api.bearer_secret:
        named.append(f"bearer token from secret {api.bearer_secret}")
    return tuple(named)


def rest_apis(settings: Settings, inventory: Inventory) -> list[RestApi]:
    """The configured REST APIs, by name."""
    out: list[RestApi] = []
    for name, api in sorted(settings.apis.items()):
        source = OpenApiSource(api.spec).name
        out.append(
            RestApi(
                name=name,
                tools=inventory.servers.get(name, 0),
                spec=source,
                base_url=api.base_url,
                credentials=_credentials(api),
                record=inventory.sync.get(source),
            )
        )
    return out


def source_kind(source: str, api_specs: set[str]) -> str:
    """What kind of source ``source`` is (see the module docstring)."""
    if source.startswith(MCP_PREFIX):
        return "MCP server"
    if source.startswith(TOOLS_PREFIX):
        return "tool folder"
    if source in api_specs or is_url(source):
        return "REST API (OpenAPI)"
    if source == "builtin":
        return "starter catalog"
    return "catalog file"


def view(settings: Settings, inventory: Inventory) -> dict[str, object]:
    """What the catalog page shows of servers, APIs and sources' kinds."""
    apis = rest_apis(settings, inventory)
    names = {a.name for a in apis}
    specs = {a.spec for a in apis}
    return {
        "servers": {n: c for n, c in inventory.servers.items() if n not in names},
        "apis": apis,
        "kinds": {s: source_kind(s, specs) for s in [*inventory.sources, *inventory.sync]},
    }
