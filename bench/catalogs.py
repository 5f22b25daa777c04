"""Scale catalogs for latency benchmarks: N tools from the shared real sets plus generated variants.

    python bench/catalogs.py --size 10000 --out bench/out/catalog_10k.jsonl [--seed 0]

How a catalog of ``size`` tools is built (quote this in docs/BENCHMARKS.md):

1. **Real tools.** Read ``tools.jsonl`` of ``livemcpbench`` (527), ``toolbench_stable`` (2,490) and
   ``seal_tools`` (4,076) from ``../shared/bench`` in that order: 7,093 real tools whose ids are
   unique across the three sets and are kept unchanged, so each set's ``queries.jsonl`` still
   points at them.
2. **Smaller than the union** (``size`` < 7,093): a seeded random sample of ``size`` real tools,
   written in their original order.
3. **Larger than the union**: all real tools, then ``size - 7,093`` variants. Variant number
   ``k`` (0-based) copies base tool ``order[k % 7093]``, where ``order`` is a seeded shuffle of the
   real tools, so every real tool is copied once before any is copied twice. A variant keeps the
   base's ``name``, ``input_schema`` and ``category`` and changes:
   - ``server``: ``<org>-<slug of the base server, or of its category when it has none>``. The
     organisation is drawn from 27 invented names once per (pass over the real tools, base
     server), never twice for the same base server, so each pass deploys whole servers under new
     owners (``acme-yahoo-finance-mcp-server`` carries all of that server's tools copied in that
     pass); a numeric suffix is added in the rare case an id is already taken;
   - ``id``: ``<new server>::<name>``;
   - ``description``: if it has two or more sentences, they are rotated by a random non-zero
     offset; then one word from a fixed synonym table (get -> retrieve, list -> enumerate,
     create -> make, ...) is swapped, case kept, when the text has one; if neither applied,
     `` (via <Org>)`` is appended. So no variant's text equals its base's and every variant
     needs its own embedding (a content-hash cache cannot shortcut the index build);
   - ``variant_of``: the base tool's id (an extra field; loaders ignore it).

All randomness comes from one ``random.Random(seed)``, so the same size and seed give the
same file byte for byte; the CLI prints its SHA-256 so a benchmark can name the exact catalog.

What this does and does not model: the variants are near-duplicates of real tools, like the
same MCP server deployed by several organisations. They reproduce index size, posting-list
lengths and clusters of close vectors (a hard case for approximate nearest-neighbour search),
not the vocabulary diversity of 100k distinct real tools. Retrieval quality measured on a
scaled catalog is a test of robustness to near-duplicate distractors, not a quality figure.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from pathlib import Path
from typing import Any

from shared_data import SHARED_BENCH

BENCH_DIR = SHARED_BENCH
SETS = ("livemcpbench", "toolbench_stable", "seal_tools")
ORGS = (
    "acme",
    "bluefin",
    "cobalt",
    "driftwood",
    "ember",
    "fjord",
    "granite",
    "harbor",
    "indigo",
    "juniper",
    "kestrel",
    "lumen",
    "meridian",
    "nimbus",
    "northwind",
    "orchid",
    "pinnacle",
    "quartz",
    "redwood",
    "sierra",
    "tundra",
    "umber",
    "vertex",
    "willow",
    "xenon",
    "yarrow",
    "zephyr",
)
# Verbs and nouns common in tool descriptions, each with a replacement that keeps the sentence
# readable; one occurrence, chosen at random, is swapped per variant.
SYNONYMS = {
    "get": "retrieve",
    "gets": "retrieves",
    "list": "enumerate",
    "lists": "enumerates",
    "create": "make",
    "creates": "makes",
    "delete": "remove",
    "deletes": "removes",
    "update": "modify",
    "updates": "modifies",
    "show": "display",
    "shows": "displays",
    "find": "locate",
    "finds": "locates",
    "check": "verify",
    "checks": "verifies",
    "returns": "provides",
    "information": "details",
    "info": "details",
    "specific": "particular",
    "given": "provided",
    "convert": "transform",
    "generate": "produce",
    "generates": "produces",
    "analyze": "examine",
    "fetch": "retrieve",
    "fetches": "retrieves",
    "retrieve": "obtain",
    "retrieves": "obtains",
    "search": "query",
}
_SYNONYM_RE = re.compile(r"\b(" + "|".join(SYNONYMS) + r")\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


def load_real(bench_dir: Path = BENCH_DIR, sets: tuple[str, ...] = SETS) -> list[dict[str, Any]]:
    """All tools of the given shared sets, in set order then file order.

    Raises:
        FileNotFoundError: a set's tools.jsonl is missing (the message names the path).
        ValueError: two sets share a tool id.
    """
    tools: list[dict[str, Any]] = []
    seen: set[str] = set()
    for name in sets:
        path = bench_dir / name / "tools.jsonl"
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} not found; pass --bench-dir to the shared bench folder"
            )
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    continue
                tool = json.loads(line)
                if tool["id"] in seen:
                    raise ValueError(f"tool id {tool['id']!r} occurs in more than one set")
                seen.add(tool["id"])
                tools.append(tool)
    return tools


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "tools"


def _swap_synonym(text: str, rng: random.Random) -> str:
    matches = list(_SYNONYM_RE.finditer(text))
    if not matches:
        return text
    match = matches[rng.randrange(len(matches))]
    word = match.group(0)
    new = SYNONYMS[word.lower()]
    if word[0].isupper():
        new = new[0].upper() + new[1:]
    return text[: match.start()] + new + text[match.end() :]


def vary_description(text: str, org: str, rng: random.Random) -> str:
    """Rotate the sentences, swap one synonym; guarantee the result differs from ``text``."""
    sentences = [s for s in _SENTENCE_END.split(text.strip()) if s]
    if len(sentences) > 1:
        shift = rng.randrange(1, len(sentences))
        sentences = sentences[shift:] + sentences[:shift]
    varied = _swap_synonym(" ".join(sentences), rng)
    if varied == text:
        varied = f"{text} (via {org.capitalize()})".strip()
    return varied


class ServerNamer:
    """Names the fork of a base server in one pass: a fresh organisation per (pass, server)."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._chosen: dict[tuple[int, str], str] = {}
        self._used: dict[str, set[str]] = {}

    def org_and_server(self, generation: int, origin: str) -> tuple[str, str]:
        """The organisation and server name for ``origin`` in pass ``generation``."""
        key = (generation, origin)
        if key not in self._chosen:
            used = self._used.setdefault(origin, set())
            free = [org for org in ORGS if org not in used] or list(ORGS)
            org = free[self._rng.randrange(len(free))]
            used.add(org)
            self._chosen[key] = org
        org = self._chosen[key]
        server = f"{org}-{_slug(origin)}"
        # More passes than organisations (over ~190k tools): keep servers apart by pass number.
        return org, server if generation < len(ORGS) else f"{server}-{generation + 1}"


def make_variant(
    base: dict[str, Any], generation: int, namer: ServerNamer, rng: random.Random, taken: set[str]
) -> dict[str, Any]:
    """A copy of ``base`` served by an invented organisation, with a new id and reworded text."""
    origin = str(base.get("server") or base.get("category") or "tools")
    org, server = namer.org_and_server(generation, origin)
    tool_id, suffix = f"{server}::{base['name']}", 1
    while tool_id in taken:
        suffix += 1
        tool_id = f"{server}-{suffix}::{base['name']}"
    taken.add(tool_id)
    variant: dict[str, Any] = {
        "id": tool_id,
        "name": base["name"],
        "description": vary_description(str(base.get("description") or ""), org, rng),
        "input_schema": base.get("input_schema"),
        "server": tool_id.split("::", 1)[0],
        "variant_of": base["id"],
    }
    if base.get("category") is not None:
        variant["category"] = base["category"]
    return variant


def build_catalog(
    size: int, *, seed: int = 0, bench_dir: Path = BENCH_DIR, sets: tuple[str, ...] = SETS
) -> list[dict[str, Any]]:
    """Build a catalog of exactly ``size`` tools as the module docstring describes.

    Raises:
        ValueError: ``size`` is below 1, or the sets share an id.
        FileNotFoundError: a set is missing.
    """
    if size < 1:
        raise ValueError(f"size must be at least 1, got {size}")
    real = load_real(bench_dir, sets)
    rng = random.Random(seed)
    if size <= len(real):
        keep = set(rng.sample(range(len(real)), size))
        return [tool for i, tool in enumerate(real) if i in keep]
    order = list(real)
    rng.shuffle(order)
    taken = {tool["id"] for tool in real}
    namer = ServerNamer(rng)
    variants = [
        make_variant(order[k % len(order)], k // len(order), namer, rng, taken)
        for k in range(size - len(real))
    ]
    return real + variants


def write_catalog(tools: list[dict[str, Any]], path: Path) -> str:
    """Write ``tools`` as JSONL (one tool per line) and return the file's SHA-256 hex digest.

    Raises:
        OSError: the file cannot be written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(tool, ensure_ascii=False) + "\n" for tool in tools).encode("utf-8")
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit code."""
    parser = argparse.ArgumentParser(description="Build a scale catalog (see module docstring).")
    parser.add_argument("--size", type=int, required=True, help="number of tools")
    parser.add_argument(
        "--out", type=Path, help="output JSONL (default bench/out/catalog_<size>.jsonl)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bench-dir", type=Path, default=BENCH_DIR, help="shared bench folder")
    args = parser.parse_args(argv)
    out = args.out or Path(__file__).parent / "out" / f"catalog_{args.size}.jsonl"
    try:
        tools = build_catalog(args.size, seed=args.seed, bench_dir=args.bench_dir)
        digest = write_catalog(tools, out)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    variants = sum(1 for tool in tools if "variant_of" in tool)
    print(
        f"{out}: {len(tools)} tools ({len(tools) - variants} real, {variants} variants), "
        f"seed {args.seed}, sha256 {digest}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
