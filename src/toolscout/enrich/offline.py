"""The offline enricher (the default): no model, no network, deterministic.

From a tool's name, parameter names, schema enums and description it derives

* the action and the entities (``get_channel_clips`` -> get / channel clips), with the action
  taken from the description when the name has none ("Driver Standings" / "Will return..."),
* action-entity pairs in the words users type ("fetch channel clips", "get channel video"),
* keywords: synonyms of the action and of the entities, and spelled-out abbreviations,
* a one-sentence English description built from those parts,

and for each server a profile: the words its tools share (its domain), its entity types and
verbs. Everything it writes lands in separate lexical fields, so ranking weights decide how
much it counts.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields

from toolscout.enrich.base import ServerProfile, ToolEnrichment
from toolscout.enrich.lexicon import (
    ABBREVIATIONS,
    GENERIC_WORDS,
    NOUN_SYNONYMS,
    VERB_FORMS,
    VERB_SYNONYMS,
)
from toolscout.models import Tool
from toolscout.search.document import readable_name
from toolscout.search.text import STOPWORDS, split_identifier

#: Bump when the algorithm or the tables change: cached enrichments carry the name.
OFFLINE_VERSION = "offline-1"

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
#: A server's shared words must appear in at least this share of its tools.
SHARED_SHARE = 0.3
MAX_ENTITY_WORDS = 4
MAX_PROFILE_KEYWORDS = 12
MAX_VALUE_CHARS = 60


def _words(text: str) -> list[str]:
    """Lower-case identifier parts of free text (camelCase and snake_case split)."""
    out: list[str] = []
    for match in _WORD.finditer(text):
        out.extend(split_identifier(match.group(0)))
    return out


def _content_words(words: Iterable[str]) -> list[str]:
    return [
        w
        for w in words
        if len(w) > 1 and not w.isdigit() and w not in STOPWORDS and w not in GENERIC_WORDS
    ]


def _singular(word: str) -> str:
    # Good enough for table look-ups ("issues" -> "issue", "categories" -> "category").
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def action_of(tool: Tool) -> tuple[str, bool]:
    """The canonical verb of a tool and whether it was stated (False: inferred as ``get``)."""
    for word in split_identifier(tool.name):
        if word in VERB_FORMS:
            return VERB_FORMS[word], True
    # Descriptions usually open with the verb ("Retrieve ...", "Will return ...").
    for word in _words(tool.description)[:3]:
        verb = VERB_FORMS.get(word) or VERB_FORMS.get(_singular(word))
        if verb:
            return verb, True
    return "get", False


def entities_of(tool: Tool) -> list[str]:
    """The nouns of a tool's name (its object), without verbs and plumbing words."""
    words = [w for w in split_identifier(tool.name) if w not in VERB_FORMS]
    return _content_words(words)[:MAX_ENTITY_WORDS]


def _synonyms(entity: list[str]) -> list[str]:
    out: list[str] = []
    for word in entity:
        base = _singular(word)
        out.extend(NOUN_SYNONYMS.get(word, NOUN_SYNONYMS.get(base, ())))
        if word in ABBREVIATIONS:
            out.append(ABBREVIATIONS[word])
    return out


def action_pairs(
    verb: str, entity: list[str], *, verb_synonyms: bool = True, noun_synonyms: bool = True
) -> list[str]:
    """``get`` + ``channel clips`` -> get/fetch/retrieve channel clips, get channel video..."""
    if not entity:
        return [verb]
    phrase = " ".join(entity)
    pairs = [f"{verb} {phrase}"]
    if verb_synonyms:
        pairs.extend(f"{syn} {phrase}" for syn in VERB_SYNONYMS.get(verb, ())[:3])
    if noun_synonyms:
        head = entity[-1]
        prefix = " ".join(entity[:-1])
        for syn in NOUN_SYNONYMS.get(head, NOUN_SYNONYMS.get(_singular(head), ()))[:2]:
            pairs.append(" ".join(x for x in (verb, prefix, syn) if x))
    return pairs


def _param_words(tool: Tool) -> list[str]:
    words: list[str] = []
    for name in tool.parameter_names()[:12]:
        words.extend(_content_words(split_identifier(name)))
    return words


def schema_values(tool: Tool) -> list[str]:
    """Words of the example values a schema gives (``default``, ``examples``, ``example``).

    Example values name the things a tool is about ("messi", "arctic monkeys", "usd") - the
    words a request mentions - and the lexical fields do not index them otherwise. Long values,
    URLs and numbers say little and are skipped.
    """
    props = (tool.input_schema or {}).get("properties")
    if not isinstance(props, dict):
        return []
    words: list[str] = []
    for schema in list(props.values())[:20]:
        if not isinstance(schema, dict):
            continue
        values: list[object] = [schema.get("default"), schema.get("example")]
        examples = schema.get("examples")
        if isinstance(examples, list):
            values.extend(examples[:5])
        for value in values:
            if isinstance(value, str) and 1 < len(value) <= MAX_VALUE_CHARS and "://" not in value:
                words.extend(w for w in _content_words(_words(value)) if not _has_digit(w))
    return list(dict.fromkeys(words))


def _has_digit(word: str) -> bool:
    return any(c.isdigit() for c in word)


def _sentence(verb: str, entity: list[str], tool: Tool, params: list[str]) -> str:
    subject = " ".join(entity) or readable_name(tool.name).lower()
    text = f"{verb.capitalize()} {subject}"
    if tool.server:
        text += f" from {readable_name(tool.server)}"
    if params:
        text += " by " + ", ".join(dict.fromkeys(params[:4]))
    return text + "."


@dataclass(frozen=True)
class OfflineOptions:
    """Which parts the offline enricher writes. The defaults are the measured ones
    (docs/BENCHMARKS.md section 6): synonyms and the generated sentence are off because on
    ToolBench and Seal-Tools they cost more (longer rows, common words) than they found; they
    help paraphrased requests a little, so they stay available. ``context_use_case`` puts the
    server's entities and the schema's example values into one sentence that the embedding
    text includes (the other parts reach only the lexical fields).
    """

    verb_synonyms: bool = False
    noun_synonyms: bool = False
    sentence: bool = False
    pairs: bool = True
    shared_words: bool = False
    sibling_entities: bool = True
    example_values: bool = True
    context_use_case: bool = True

    def tag(self) -> str:
        """Short form for the enricher name, so cached rows of other options are not reused."""
        return "".join("1" if getattr(self, f.name) else "0" for f in fields(self))


def _context(tool: Tool, profile: ServerProfile | None) -> tuple[str, ...]:
    """One sentence of server context for the embedding: what else the server handles and
    the example values the tool's schema gives."""
    parts: list[str] = []
    if profile is not None and profile.entity_types and tool.server:
        parts.append(
            f"Part of {readable_name(tool.server)}, which handles "
            + ", ".join(profile.entity_types[:8])
            + "."
        )
    values = schema_values(tool)[:6]
    if values:
        parts.append("For example: " + ", ".join(values) + ".")
    return (" ".join(parts),) if parts else ()


class OfflineEnricher:
    """Rule-based enrichment (see the module docstring). Thread-safe: it has no state."""

    concurrency = 1

    def __init__(self, options: OfflineOptions | None = None) -> None:
        self.options = options or OfflineOptions()
        self.name = f"{OFFLINE_VERSION}:{self.options.tag()}"

    def enrich(self, tool: Tool, profile: ServerProfile | None) -> ToolEnrichment:
        """Raises: nothing on purpose; every tool gets at least its action pair."""
        opts = self.options
        verb, _stated = action_of(tool)
        entity = entities_of(tool)
        params = _param_words(tool)
        keywords: list[str] = list(VERB_SYNONYMS.get(verb, ())) if opts.verb_synonyms else []
        if opts.noun_synonyms:
            keywords.extend(_synonyms(entity))
            keywords.extend(ABBREVIATIONS[w] for w in params if w in ABBREVIATIONS)
        if opts.example_values:
            keywords.extend(schema_values(tool))
        return ToolEnrichment(
            enhanced=_sentence(verb, entity, tool, params) if opts.sentence else "",
            actions=tuple(
                action_pairs(
                    verb, entity, verb_synonyms=opts.verb_synonyms, noun_synonyms=opts.noun_synonyms
                )
            )
            if opts.pairs
            else (),
            keywords=tuple(dict.fromkeys(keywords)),
            use_cases=_context(tool, profile) if opts.context_use_case else (),
        )

    def profile(self, server: str, tools: Sequence[Tool]) -> ServerProfile:
        """Aggregate a server's tools: shared words, entity types, verbs.

        Raises: nothing on purpose."""
        df: Counter[str] = Counter()
        entity_df: Counter[str] = Counter()
        verbs: Counter[str] = Counter()
        for tool in tools:
            verb, _ = action_of(tool)
            verbs[verb] += 1
            entity = entities_of(tool)
            entity_df.update(set(entity))
            text_words = _content_words(_words(tool.description)) + entity
            df.update({_singular(w) for w in text_words if w not in VERB_FORMS})
        need = max(2, int(SHARED_SHARE * len(tools) + 0.999))
        shared = sorted((w for w, n in df.items() if n >= need), key=lambda w: (-df[w], w))
        entities = sorted(entity_df, key=lambda w: (-entity_df[w], w))[:MAX_PROFILE_KEYWORDS]
        ranked_verbs = sorted(verbs, key=lambda v: (-verbs[v], v))
        keywords: list[str] = []
        # Only a server's words are spread over its tools: an agent connects to a server and
        # asks for several of its tools together, while a category is just a label
        # (on Seal-Tools' categories the same words cost 2 nDCG points; docs/BENCHMARKS.md).
        if any(t.server for t in tools):
            if self.options.shared_words:
                keywords.extend(shared[:MAX_PROFILE_KEYWORDS])
            if self.options.sibling_entities:
                keywords.extend(e for e in entities if e not in keywords)
        name = readable_name(server)
        return ServerProfile(
            server=server,
            domain=name,
            capabilities=tuple(f"{v} {e}" for v, e in zip(ranked_verbs, entities, strict=False)),
            entity_types=tuple(entities),
            action_verbs=tuple(ranked_verbs),
            integration=f"{name} ({len(tools)} tools)",
            keywords=tuple(keywords),
        )
