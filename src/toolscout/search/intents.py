"""Split a request into its intents: "book a meeting with Ana and email her the agenda" asks for
two tools, and each part should find its own.

Sentences are split first (:func:`~toolscout.search.text.split_sentences`); inside a sentence a
conjunction or comma starts a new intent only when the words after it open a new request: an
imperative verb ("and *email* her the agenda", ", *fix* the port") or a question ("and *how* do
I get there"). So "cats and dogs" or "find stations and places to park" stay whole. Sentences
are always apart, so a request that states one need over several sentences is searched as its
parts: the learned ranker also reads the whole request's row, the hand-set fusion only with
``SearchConfig.whole_row`` (docs/benchmarks/ranking.md, "Why the hand-set fusion loses first
places").
"""

from __future__ import annotations

import re

from toolscout.search.text import split_sentences

#: At most this many intents per request (more are merged into the last one): long
#: multi-request prompts (ToolBench's) keep up to eight sentences apart.
MAX_INTENTS = 8

#: Words that open a request in the imperative, as agents and people phrase them.
REQUEST_VERBS = frozenset(
    """
    accept acknowledge add alert analyse analyze append approve archive ask assign attach book
    boot bill build buy calculate call cancel change chart check clean clear click close comment
    commit compare compute convert copy count create decline delete deploy describe detect dm
    download draft edit email explain export extract fetch file fill find fix forward generate
    geocode get give import invite let link list load locate log look make mark merge message
    move mute notify open order page paste pay ping plan play plot post predict print publish
    pull push put read record refund remind remove rename reopen reply report request reserve
    resize resolve restart review run save scan schedule search send set share show shrink sign
    silence sort start stop store stream submit summarise summarize sync take tell text track
    transcribe transfer translate turn type undo update upload validate verify visualize write
    """.split()
)

#: Words that open a question ("and how do I get there", "and does it have ...").
QUESTION_WORDS = frozenset(
    "what whats what's how when where who whom whose which why does do did is are can could".split()
)

#: Words that open a second object of the same request ("check the air quality *and any*
#: weather warnings"): the part after "and" borrows the sentence's verb.
DETERMINERS = frozenset("a an the my our your his her its their any some all".split())

#: Verbs that take two objects joined by "and" ("compare A and the B"): never carried over.
PAIR_VERBS = frozenset("compare merge link relate combine join diff swap connect match".split())

#: Filler allowed between the separator and the verb ("and then email", "and also send").
_FILLER = frozenset("then also please afterwards next finally".split())

_SEPARATOR = re.compile(
    r"\s*(?:,\s*(?:and|then|also)?|\band\b|\bthen\b|\bplus\b)\s+", re.IGNORECASE
)
_WORD = re.compile(r"[A-Za-z']+")


def _words(fragment: str, n: int) -> list[str]:
    words = [w.lower() for w in _WORD.findall(fragment)[:n]]
    while words and words[0] in _FILLER:
        words = words[1:]
    return words


def _opens_request(fragment: str) -> bool:
    words = _words(fragment, 3)
    return bool(words) and (words[0] in REQUEST_VERBS or words[0] in QUESTION_WORDS)


def _lead_verb(sentence: str) -> str | None:
    """The request verb among a sentence's first words ("please *show* ...", "can you *get*")."""
    return next((w for w in _words(sentence, 4) if w in REQUEST_VERBS), None)


def _split_clause(sentence: str) -> list[str]:
    parts: list[str] = []
    start = 0
    prefix = ""
    verb = _lead_verb(sentence)
    if verb in PAIR_VERBS:
        verb = None
    for match in _SEPARATOR.finditer(sentence):
        rest = sentence[match.end() :]
        head = sentence[start : match.start()].strip()
        if len(head.split()) < 2:
            continue
        if _opens_request(rest):
            parts.append(prefix + head)
            start, prefix = match.end(), ""
        elif (
            verb
            and match.group(0).strip().lower() == "and"
            and _words(rest, 1)[:1]
            and (_words(rest, 1)[0] in DETERMINERS)
        ):
            parts.append(prefix + head)
            start, prefix = match.end(), verb + " "
    tail = sentence[start:].strip()
    if tail:
        parts.append(prefix + tail)
    return [p for p in parts if len(p) > 3]


def split_intents(text: str) -> list[str]:
    """The request's intents in order; a single-intent request gives ``[text]``."""
    pieces: list[str] = []
    for sentence in split_sentences(text) or [text.strip()]:
        pieces.extend(_split_clause(sentence))
    pieces = [p.rstrip(" ,.;?!") for p in pieces if p.strip(" ,.;?!")]
    if not pieces:
        return [text.strip()]
    if len(pieces) > MAX_INTENTS:
        pieces = [*pieces[: MAX_INTENTS - 1], " ".join(pieces[MAX_INTENTS - 1 :])]
    return pieces
