"""IndexWriter: turn tools into index entries (text, hash, vector) and write them in batches.

The engine's ``index``, the enrichment service's re-index and ``toolscout db`` all write
through one writer, so every path derives fields and hashes the same way.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from functools import cached_property
from queue import SimpleQueue
from typing import TYPE_CHECKING, Any

from toolscout.embed.base import Embedder
from toolscout.models import Filters, IndexReport, Loaded, Problem, Tool
from toolscout.search.document import DOCUMENT_VERSION, embed_text, lexical_fields
from toolscout.search.text import ANALYZER_VERSION
from toolscout.store.base import IndexEntry, Store

if TYPE_CHECKING:
    from toolscout.enrich.pipeline import Fields

Progress = Callable[[int, int], None]
#: Called with a chunk's entries once they are written (in the writing thread).
Written = Callable[[Sequence["IndexEntry"]], None]
#: Tool texts embedded (and written) per batch.
EMBED_CHUNK = 256
#: Texts embedded per call inside a chunk, so progress moves every few seconds.
PROGRESS_STEP = 64
#: A write of at least this many tools that also rewrites half the index is a bulk load.
BULK_MIN = 2000
#: Embedded chunks that may wait for their write while the next one embeds (0: embed and
#: write one chunk after the other, on the calling thread).
AHEAD = 1
#: The interpreter's switch interval while a pipelined write runs (seconds; Python's default
#: is 0.005). An embedding thread back from onnxruntime needs the interpreter for a few dozen
#: microseconds before its next text; while the writing thread runs Python, it would wait up
#: to a whole interval for it, about as long as embedding a short text takes.
HANDOFF_S = 0.0005


@dataclass(frozen=True)
class Prepared:
    """A tool with the derived text the store needs."""

    tool: Tool
    text: str
    text_hash: str
    enrichment: dict[str, str] | None = None

    @cached_property
    def fields(self) -> dict[str, str]:
        """The lexical fields, analysed when first read: an index run reads them as it writes
        each chunk, beside the next chunk's embedding, not before the first text embeds."""
        return lexical_fields(self.tool, self.enrichment)


def input_hash(tool: Tool, enrichment: dict[str, str] | None = None) -> str:
    """Hash of every input of a tool's fields and vector, stored as its ``text_hash``.

    Hashing the inputs (content hash, server, category, source, enrichment, and the versions of
    the code that derives text) rather than the derived text lets a sync tell an unchanged tool
    without analysing its text: a no-change sync of 10k tools is then bound by reading, not by
    tokenising. ``source`` is included so a tool that moved between sources is rewritten with
    its new source (otherwise pruning the old source would delete it).
    """
    payload = [
        DOCUMENT_VERSION,
        ANALYZER_VERSION,
        tool.content_hash,
        tool.server,
        tool.category,
        tool.source,
        sorted((enrichment or {}).items()),
    ]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode("utf-8")).hexdigest()


def prepare(tool: Tool, enrichment: dict[str, str] | None = None) -> Prepared:
    """The embedding text and input hash of ``tool`` (with its enrichment), and its lexical
    fields when they are first read."""
    return Prepared(tool, embed_text(tool, enrichment), input_hash(tool, enrichment), enrichment)


def keep_unreadable(
    store: Store, dropped: set[str], damaged: dict[str, list[Problem]], report: IndexReport
) -> set[str]:
    """Of the tools a prune would delete, keep those an unreadable entry may stand for.

    An entry that cannot be read (a typo, a file half-written when it was read) may be one of
    the tools the listing seems to have dropped; deleting it would lose indexed data for a
    mistake the next save fixes. An entry whose place names its ids (a tool file: its path)
    keeps only those, and the report names the entry and the ids; an entry that names nothing
    (a catalog line that does not parse) may be any tool of its source, which then keeps every
    tool it no longer lists. ``damaged`` maps each source to its unreadable entries.

    Raises: StoreError.
    """
    if not dropped or not damaged:
        return dropped
    kept: set[str] = set()
    for source, problems in sorted(damaged.items()):
        mine = store.tools.hashes(Filters(sources=(source,))).keys() & dropped
        if not mine:
            continue
        if any(p.stands_for is None for p in problems):
            ids = sorted(mine)
            kept.update(ids)
            report.skipped.append(
                Problem(
                    source,
                    "(prune)",
                    f"kept {len(ids)} indexed tool(s) this source no longer lists, because "
                    f"some of its entries could not be read (e.g. {ids[0]!r}); fix those "
                    "entries and index or sync again",
                )
            )
            continue
        for problem in problems:
            own = sorted(mine.intersection(problem.stands_for or ()))
            if own:
                kept.update(own)
                report.skipped.append(
                    Problem(
                        problem.location,
                        "(prune)",
                        f"kept indexed {', '.join(map(repr, own))}: this file could not be "
                        "read, so its last good version stays; fix it and index or sync again",
                    )
                )
    return dropped - kept


#: Enrichment fields for tools about to be indexed, and same-server tools to re-index with them
#: (:meth:`toolscout.enrich.service.EnrichmentService.enrichment_fields`).
Enrichment = Callable[[dict[str, Tool], set[str]], tuple[dict[str, "Fields"], list[Tool]]]


@dataclass
class IndexPlan:
    """What an index run writes and deletes, with its report so far."""

    report: IndexReport
    todo: list[Prepared]
    #: Tools to delete (a prune's tools that their sources no longer list).
    dropped: set[str]


def plan_index(
    store: Store, loads: Sequence[Loaded], *, prune: bool, enrichment: Enrichment
) -> IndexPlan:
    """Compare the loaded tools with the index: new and changed tools to write (with their
    enrichment, and same-server tools whose server profile changed), unchanged ones skipped
    without text analysis, and with ``prune`` the tools their sources no longer list, except
    those :func:`keep_unreadable` keeps. Reads only.

    Raises: StoreError.
    """
    report = IndexReport()
    tools, sources, damaged = _gather(loads, report)
    existing = store.tools.hashes()
    owned = set(store.tools.hashes(Filters(sources=tuple(sorted(sources))))) if sources else set()
    dropped = owned - set(tools) if prune else set()
    dropped = keep_unreadable(store, dropped, damaged, report)
    for tool_id in sorted(set(tools).intersection(existing) - owned):
        report.warnings.append(
            Problem(
                tools[tool_id].source or "",
                "id",
                f"{tool_id!r} was indexed from another source; this one replaces it "
                "(give --server or explicit ids to keep both)",
            )
        )
    extra, context = enrichment(tools, dropped)
    todo: list[Prepared] = []
    for tool in tools.values():
        old = existing.get(tool.id)
        if old is None:
            report.added += 1
        elif old[1] != input_hash(tool, extra.get(tool.id)):
            report.updated += 1
        else:
            report.unchanged += 1
            continue  # no text analysis for unchanged tools: see input_hash
        todo.append(prepare(tool, extra.get(tool.id)))
    for tool in context:  # same-server tools whose server profile changed
        if existing.get(tool.id, ("", ""))[1] != input_hash(tool, extra.get(tool.id)):
            report.updated += 1
            todo.append(prepare(tool, extra.get(tool.id)))
    return IndexPlan(report, todo, dropped)


def _gather(
    loads: Sequence[Loaded], report: IndexReport
) -> tuple[dict[str, Tool], set[str], dict[str, list[Problem]]]:
    """The loaded tools by id (the first of a duplicated id wins, the others are reported),
    the sources they came from, and each source's entries that could not be read."""
    tools: dict[str, Tool] = {}
    sources: set[str] = set()
    damaged: dict[str, list[Problem]] = {}
    for loaded in loads:
        sources.add(loaded.source)
        unreadable = [p for p in loaded.problems if not p.deliberate]
        if unreadable:
            damaged.setdefault(loaded.source, []).extend(unreadable)
        report.skipped.extend(loaded.problems)
        for tool in loaded.tools:
            if tool.id in tools:
                report.skipped.append(
                    Problem(loaded.source, "id", f"duplicate id {tool.id!r}; kept the first")
                )
                continue
            tools[tool.id] = tool
    return tools, sources, damaged


class IndexWriter:
    """Embeds prepared tools in chunks and upserts them, one transaction per chunk.

    With more than one chunk, the embedding runs on a thread of its own up to ``AHEAD`` chunks
    ahead of the writes, so a chunk's write (and the ``written`` hook: skills classification)
    runs beside the next chunk's embedding instead of leaving a core idle. The writes stay in
    the calling thread, in order, one transaction each.
    """

    def __init__(self, store: Store, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder

    def write(
        self,
        todo: Sequence[Prepared],
        report: IndexReport,
        progress: Progress | None = None,
        written: Written | None = None,
    ) -> None:
        """Embed and upsert ``todo``, counting into ``report.embedded``; ``written`` is called
        with each chunk's entries once its transaction has committed.

        Raises:
            StoreError, EmbedError (or what ``written`` raises). The chunks before the one that
            failed stay written; nothing of that chunk or of any later one is.
        """
        total = len(todo)
        if progress:
            progress(0, total)
        # Longest texts together: batches pad less (the model sorts again inside a chunk).
        ordered = sorted(todo, key=lambda p: len(p.text))
        chunks = [ordered[s : s + EMBED_CHUNK] for s in range(0, total, EMBED_CHUNK)]
        # A big rewrite lets the store defer index upkeep to one rebuild (PostgreSQL's HNSW
        # graph: 2x faster for a 10k sync, docs/BENCHMARKS.md); other stores ignore it.
        big = total >= BULK_MIN and total * 2 >= self.store.count()
        with self.store.bulk() if big else nullcontext():
            if len(chunks) > 1 and AHEAD > 0:
                self._pipelined(chunks, total, report, progress, written)
                return
            for k, chunk in enumerate(chunks):
                vectors = self._embed(chunk, k * EMBED_CHUNK, total, progress)
                self._store(chunk, vectors, report, written)

    def _embed(
        self, chunk: Sequence[Prepared], done: int, total: int, progress: Progress | None
    ) -> list[Any]:
        """A chunk's vectors, embedded in steps so a progress bar moves while it embeds (the
        same batches inside the model)."""
        vectors: list[Any] = []
        for step in range(0, len(chunk), PROGRESS_STEP):
            vectors.extend(
                self.embedder.embed([p.text for p in chunk[step : step + PROGRESS_STEP]])
            )
            if progress:
                progress(min(done + step + PROGRESS_STEP, total), total)
        return vectors

    def _store(
        self,
        chunk: Sequence[Prepared],
        vectors: Sequence[Any],
        report: IndexReport,
        written: Written | None,
    ) -> None:
        entries = [
            IndexEntry(p.tool, p.fields, vectors[i], p.text_hash) for i, p in enumerate(chunk)
        ]
        self.store.upsert(entries)
        report.embedded += len(chunk)
        if written:
            written(entries)

    def _pipelined(
        self,
        chunks: Sequence[Sequence[Prepared]],
        total: int,
        report: IndexReport,
        progress: Progress | None,
        written: Written | None,
    ) -> None:
        """Embed on a thread of its own while this thread writes. The embedding thread hands
        over progress, each chunk's vectors (in order) and at last its end or its error; it
        waits for a free slot before handing over a chunk, so at most ``AHEAD`` embedded chunks
        wait for their write. On any failure the embedding thread is stopped before this
        returns (it finishes the chunk in hand and hands nothing more over)."""
        ahead = _Ahead(AHEAD)
        thread = threading.Thread(
            target=ahead.produce,
            args=(chunks, lambda k, c, p: self._embed(c, k * EMBED_CHUNK, total, p)),
            name="toolscout-index-embed",
            daemon=True,
        )
        with quick_handoffs():
            thread.start()
            try:
                for kind, value in ahead.items():
                    if kind == "progress" and progress:
                        progress(int(value), total)
                    elif kind == "chunk":
                        k, vectors = value
                        self._store(chunks[k], vectors, report, written)
                        ahead.slots.release()
            finally:
                ahead.stop.set()
                thread.join()


Item = tuple[str, Any]
_handoffs = {"runs": 0, "saved": 0.0}
_handoffs_lock = threading.Lock()


@contextmanager
def quick_handoffs() -> Iterator[None]:
    """``HANDOFF_S`` as the switch interval while at least one pipelined write runs in this
    process; the previous interval once the last one ends."""
    with _handoffs_lock:
        if _handoffs["runs"] == 0:
            _handoffs["saved"] = sys.getswitchinterval()
            sys.setswitchinterval(min(HANDOFF_S, _handoffs["saved"]))
        _handoffs["runs"] += 1
    try:
        yield
    finally:
        with _handoffs_lock:
            _handoffs["runs"] -= 1
            if _handoffs["runs"] == 0:
                sys.setswitchinterval(_handoffs["saved"])


class _Ahead:
    """The hand-over between the embedding thread and the writing one."""

    def __init__(self, depth: int) -> None:
        self.queue: SimpleQueue[Item] = SimpleQueue()
        self.slots = threading.Semaphore(depth)
        self.stop = threading.Event()

    def produce(
        self,
        chunks: Sequence[Sequence[Prepared]],
        embed: Callable[[int, Sequence[Prepared], Progress], list[Any]],
    ) -> None:
        """Embed every chunk in order, handing each over (the embedding thread's body)."""
        try:
            for k, chunk in enumerate(chunks):
                if self.stop.is_set():
                    return
                vectors = embed(k, chunk, lambda done, _total: self.queue.put(("progress", done)))
                while not self.slots.acquire(timeout=0.05):
                    if self.stop.is_set():
                        return
                self.queue.put(("chunk", (k, vectors)))
        except BaseException as exc:  # handed to the writing thread, raised there
            self.queue.put(("error", exc))
            return
        self.queue.put(("end", None))

    def items(self) -> Iterator[Item]:
        """What the embedding thread hands over, until its end; its error is raised here."""
        while True:
            kind, value = self.queue.get()
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield kind, value
