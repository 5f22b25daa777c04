"""What a tool looks like to each retrieval leg: analysed lexical fields and the embedding text.

Kept in one place so every store indexes the same fields and the vector text and the lexical
text can never drift apart.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from typing import Any

from toolscout.models import Tool
from toolscout.search.text import analyze, name_tokens, split_identifier

#: Bump when this module changes how text is derived from a tool: stored tools are hashed by
#: their inputs (``engine.input_hash``), so only this version tells a sync to rewrite them.
DOCUMENT_VERSION = "1"

#: Embedding text is cut here: MiniLM reads 256 word pieces, and the head of a description
#: carries its meaning.
MAX_EMBED_CHARS = 1000


def _schema_text(schema: Any, depth: int = 0) -> Iterator[str]:
    """Parameter names, descriptions and enum values, depth-first, nested objects included."""
    if not isinstance(schema, dict) or depth > 4:
        return
    props = schema.get("properties")
    if isinstance(props, dict):
        for pname, pschema in props.items():
            yield str(pname)
            if isinstance(pschema, dict):
                desc = pschema.get("description")
                if isinstance(desc, str):
                    yield desc
                enum = pschema.get("enum")
                if isinstance(enum, list):
                    yield " ".join(str(v) for v in enum[:20])
                yield from _schema_text(pschema, depth + 1)
                yield from _schema_text(pschema.get("items"), depth + 1)


def readable_name(name: str) -> str:
    """``github_create_issue`` -> ``github create issue``."""
    return " ".join(split_identifier(name)) or name


def lexical_fields(tool: Tool, enrichment: Mapping[str, str] | None = None) -> dict[str, str]:
    """Analysed text per lexical field (see ``store.base.LEXICAL_FIELDS``)."""
    extra = enrichment or {}
    domain = " ".join(x for x in (tool.server, tool.category, extra.get("domain")) if x)
    return {
        "name": " ".join(name_tokens(tool.name)),
        "actions": " ".join(analyze(extra.get("actions", ""))),
        "enhanced": " ".join(analyze(extra.get("enhanced", ""))),
        "keywords": " ".join(analyze(extra.get("keywords", ""))),
        "use_cases": " ".join(analyze(extra.get("use_cases", ""))),
        "domain": " ".join(analyze(domain)),
        "description": " ".join(analyze(tool.description)),
        "params": " ".join(analyze(" ".join(_schema_text(tool.input_schema)))),
    }


def embed_text(tool: Tool, enrichment: Mapping[str, str] | None = None) -> str:
    """The text embedded for a tool: readable name, server, description, then enrichment."""
    extra = enrichment or {}
    head = readable_name(tool.name)
    if tool.server:
        head = f"{head} ({readable_name(tool.server)})"
    parts = [head + ":", tool.description.strip()]
    for key in ("enhanced", "actions", "use_cases"):
        if extra.get(key):
            parts.append(extra[key])
    params = [readable_name(p) for p in tool.parameter_names()[:12]]
    if params:
        parts.append("Parameters: " + ", ".join(params) + ".")
    return " ".join(p for p in parts if p)[:MAX_EMBED_CHARS]


def text_hash(tool: Tool, enrichment: Mapping[str, str] | None = None) -> str:
    """Hash of everything that went into a tool's fields and vector."""
    fields = lexical_fields(tool, enrichment)
    blob = embed_text(tool, enrichment) + "\x00" + "\x00".join(fields[k] for k in sorted(fields))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
