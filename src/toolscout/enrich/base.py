"""Enrichment data and the Enricher protocol shared by the offline and LLM enrichers.

Enrichment is kept *beside* a tool's own text, never instead of it: the store indexes it in
separate lexical fields (actions, enhanced, keywords, use_cases, domain) and the vector text
appends it after the original description.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from toolscout.errors import EnrichError
from toolscout.models import Tool


@dataclass(frozen=True)
class ServerProfile:
    """What one MCP server (or, without a server, one tool category) is about.

    ``tools_hash`` is the hash of the tool list the profile was made from; ``created_at`` is
    seconds since the epoch (set by the cache, not by the enricher).
    """

    server: str
    domain: str = ""
    capabilities: tuple[str, ...] = ()
    entity_types: tuple[str, ...] = ()
    action_verbs: tuple[str, ...] = ()
    integration: str = ""
    keywords: tuple[str, ...] = ()
    tools_hash: str = ""
    created_at: float = 0.0
    tokens: int = 0

    def digest(self) -> str:
        """Hash of what the profile says (not when or from what): tool enrichments depend on it."""
        skip = ("tools_hash", "created_at", "tokens")
        body = {k: v for k, v in asdict(self).items() if k not in skip}
        return _sha(json.dumps(body, sort_keys=True, ensure_ascii=False))

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_json(cls, raw: str) -> ServerProfile:
        """Raises: EnrichError when the stored payload is not a profile."""
        data = _load(raw, "profile")
        try:
            return cls(**_tuples(data))
        except TypeError as exc:
            raise EnrichError(f"stored profile does not match this toolscout: {exc}") from exc


@dataclass(frozen=True)
class ToolEnrichment:
    """Derived search text for one tool: English, short, kept beside the original."""

    enhanced: str = ""
    actions: tuple[str, ...] = ()
    use_cases: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    domain: str = ""
    tokens: int = 0

    def fields(self) -> dict[str, str]:
        """The mapping ``search.document`` reads (keys actions, enhanced, keywords, ...)."""
        out = {
            "enhanced": self.enhanced,
            "actions": ", ".join(self.actions),
            "use_cases": "; ".join(self.use_cases),
            "keywords": " ".join(self.keywords),
            "domain": self.domain,
        }
        return {k: v for k, v in out.items() if v}

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_json(cls, raw: str) -> ToolEnrichment:
        """Raises: EnrichError when the stored payload is not a tool enrichment."""
        data = _load(raw, "tool enrichment")
        try:
            return cls(**_tuples(data))
        except TypeError as exc:
            raise EnrichError(f"stored enrichment does not match this toolscout: {exc}") from exc


class Enricher(Protocol):
    """Turns tools into enrichment. Implementations must be thread-safe.

    ``name`` identifies the enricher and its version in cache rows: changing the algorithm or
    the model changes the name, which invalidates what it made before.
    """

    @property
    def name(self) -> str: ...

    @property
    def concurrency(self) -> int:
        """How many calls may run at once (1 for CPU-only enrichers)."""
        ...

    def profile(self, server: str, tools: Sequence[Tool]) -> ServerProfile:
        """Profile a server from its tools.

        Raises: EnrichError (the caller records the failure and continues without a profile)."""
        ...

    def enrich(self, tool: Tool, profile: ServerProfile | None) -> ToolEnrichment:
        """Enrich one tool in its server's context.

        Raises: EnrichError (the caller records the failure; the tool keeps its own text)."""
        ...


def group_key(tool: Tool) -> str:
    """Which profile a tool belongs to: its server, else its category, else ``(none)``."""
    return tool.server or tool.category or "(none)"


def tools_hash(tools: Sequence[Tool]) -> str:
    """Order-independent hash of a tool list (ids and contents)."""
    parts = sorted(f"{t.id}\x00{t.content_hash}" for t in tools)
    return _sha("\x01".join(parts))


def merged_fields(
    tool: Tool, enrichment: ToolEnrichment | None, profile: ServerProfile | None
) -> dict[str, str] | None:
    """Tool enrichment plus its server's domain words, as ``search.document`` wants them.

    The profile's domain is added only when it says more than the server and category names,
    which the domain field holds already (repeating them would only inflate their weight).
    """
    if enrichment is None and profile is None:
        return None
    out = enrichment.fields() if enrichment else {}
    if profile is not None:
        known = f"{tool.server or ''} {tool.category or ''}".lower()
        words = [w for w in (profile.domain, *profile.keywords) if w and w.lower() not in known]
        if profile.domain and readable_known(profile.domain, known):
            words = [w for w in words if w != profile.domain]
        out["domain"] = " ".join(w for w in (out.get("domain", ""), *words) if w)
    return {k: v for k, v in out.items() if v} or None


def readable_known(phrase: str, known: str) -> bool:
    """Whether every word of ``phrase`` already occurs in ``known`` (case-insensitive)."""
    squashed = known.replace("_", " ").replace("-", " ")
    return all(w in squashed for w in phrase.lower().split())


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _tuples(data: Mapping[str, Any]) -> dict[str, Any]:
    # JSON has no tuples; the frozen dataclasses hold tuples so they stay hashable.
    return {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}


def _load(raw: str, what: str) -> Mapping[str, Any]:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise EnrichError(f"stored {what} is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise EnrichError(f"stored {what} is not a JSON object")
    return data
