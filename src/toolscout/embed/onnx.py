"""A sentence embedder run by onnxruntime from an ONNX graph, a tokenizer.json and a small config.

One class serves the packaged models and any user folder (``embed_model = "onnx:PATH"``):

* ``config.json`` (optional in a user folder) holds ``pooling`` (``mean`` or ``cls``),
  ``normalize`` (default true), ``max_tokens`` (default 256) and ``output`` (the graph output to
  pool; default the first one). A graph whose output is already one vector per text (2-d) is
  used as it is.
* A graph quantised dynamically (``DynamicQuantizeLinear``: activations get one scale per call)
  would give a text a slightly different vector depending on the texts batched with it, so such
  a graph embeds one text per call: every vector then depends on its text only.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from toolscout.embed.base import Vectors, normalise_rows
from toolscout.embed.quantize import sha256_of
from toolscout.errors import ConfigError, EmbedError

BATCH = 32
#: Texts from which a per-call graph's documents are embedded by parallel sessions.
PARALLEL_MIN = 16


@dataclass(frozen=True)
class _Workers:
    """Single-threaded sessions of the document graph and the threads that run them."""

    sessions: list[Any]
    pool: ThreadPoolExecutor

    @property
    def size(self) -> int:
        return len(self.sessions)


@dataclass(frozen=True)
class OnnxConfig:
    """How to turn the graph's output into one vector per text."""

    pooling: str = "mean"
    normalize: bool = True
    max_tokens: int = 256
    output: str | None = None

    @classmethod
    def read(cls, path: Path) -> OnnxConfig:
        """Raises: ConfigError naming the bad field."""
        if not path.is_file():
            return cls()
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{path}: not a readable JSON file ({exc})") from exc
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: expected a JSON object")
        pooling = raw.get("pooling", "mean")
        if pooling not in ("mean", "cls"):
            raise ConfigError(f"{path}: pooling must be 'mean' or 'cls'; got {pooling!r}")
        max_tokens = raw.get("max_tokens", 256)
        if not isinstance(max_tokens, int) or max_tokens < 8:
            raise ConfigError(f"{path}: max_tokens must be an integer >= 8; got {max_tokens!r}")
        output = raw.get("output")
        if output is not None and not isinstance(output, str):
            raise ConfigError(f"{path}: output must be the name of a graph output")
        return cls(str(pooling), bool(raw.get("normalize", True)), max_tokens, output)


def session(graph: Path, threads: int) -> Any:
    """An onnxruntime CPU session with ``threads`` intra-op threads that sleep rather than spin.

    Raises: EmbedError when onnxruntime cannot load the graph.
    """
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    # Idle pool threads would otherwise spin between calls: a 2-thread query session then burns a
    # second core for the whole of each short embedding (CPU time twice the wall time).
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(
            str(graph), sess_options=opts, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # onnxruntime raises its own untyped errors
        raise EmbedError(f"onnxruntime cannot load {graph}: {exc}") from exc


def quantised_per_call(graph: Path) -> bool:
    """True when the graph quantises activations dynamically (one scale per call)."""
    import onnx

    model = onnx.load(str(graph), load_external_data=False)
    return any(node.op_type == "DynamicQuantizeLinear" for node in model.graph.node)


class OnnxEmbedder:
    """Pooled (and by default normalised) sentence vectors from an ONNX encoder.

    ``query_graph`` (optional) is a second graph for queries only, e.g. a faster int8 one.
    ``query_threads`` (optional, for a small graph): queries run on a session of their own with
    that many threads instead of sharing the document session; a second session of a small
    graph costs its size in memory.
    """

    def __init__(
        self,
        name: str,
        graph: Path,
        tokenizer: Path,
        config: OnnxConfig,
        threads: int,
        *,
        query_graph: Path | None = None,
        query_threads: int | None = None,
    ) -> None:
        from tokenizers import Tokenizer

        self.name = name
        self.config = config
        #: The sha256 of the document graph when the loader knows it (score calibrations are
        #: fitted for one graph: search/calibration.py).
        self.graph_sha256: str | None = None
        try:
            self._tokenizer = Tokenizer.from_file(str(tokenizer))
        except Exception as exc:  # tokenizers raises a bare Exception on a bad file
            raise EmbedError(f"cannot read the tokenizer {tokenizer}: {exc}") from exc
        self._tokenizer.enable_truncation(config.max_tokens)
        self._tokenizer.no_padding()
        self._session = session(graph, threads)
        self._inputs = {i.name for i in self._session.get_inputs()}
        outputs = [o.name for o in self._session.get_outputs()]
        if config.output is not None and config.output not in outputs:
            raise ConfigError(
                f"config output {config.output!r} is not an output of {graph} (it has {outputs})"
            )
        self._output = config.output or outputs[0]
        self._batch = 1 if quantised_per_call(graph) else BATCH
        # One request is a few dozen tokens: a second intra-op thread costs nearly as much CPU
        # as it saves wall time (bench/query_threads.py), and servers run searches side by side.
        # Its vectors are the document session's, byte for byte (a test holds it to that).
        own = query_threads is not None and query_threads != threads
        if query_graph is not None or own:
            self._query_session = session(query_graph or graph, query_threads or 1)
        else:
            self._query_session = self._session
        self._query_batch = 1 if query_graph and quantised_per_call(query_graph) else self._batch
        #: A request's intents are shared with a document session of the same graph.
        self._split_queries = own and query_graph is None and self._batch == 1 and threads > 1
        self._graph = graph
        self._threads = threads
        #: One lock per session (by id), made with the session: a session runs one call at once.
        self._locks = {id(x): threading.Lock() for x in (self._session, self._query_session)}
        self._workers: _Workers | None = None
        self._query_helper: _Workers | None = None
        self._workers_lock = threading.Lock()
        self.dim = int(self._embed(["dimension probe"], self._session, 1).shape[1])

    def _run(self, texts: Sequence[str], session: Any) -> Vectors:
        # One text (every call of a per-call graph): ``encode`` skips the batch call's thread
        # pool, which triples the tokenizer's time on a short request; the same ids either way.
        tok = self._tokenizer
        encodings = [tok.encode(texts[0])] if len(texts) == 1 else tok.encode_batch(list(texts))
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        feeds = {k: v for k, v in feeds.items() if k in self._inputs}
        with self._locks[id(session)]:
            (out,) = session.run([self._output], feeds)
        out = np.asarray(out, dtype=np.float32)
        if out.ndim == 2:
            pooled = out
        elif self.config.pooling == "cls":
            pooled = out[:, 0, :]
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (out * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return normalise_rows(pooled) if self.config.normalize else pooled

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed texts in length-sorted batches (one text per call for a per-call int8 graph).

        A per-call graph gains little from a second intra-op thread on one short text, so a
        large enough list is shared among one single-threaded session per thread, run side by
        side (onnxruntime releases the GIL). Each text still goes through the same graph
        alone: its vector is the same bytes whichever session embeds it.

        A per-call graph embeds a text repeated in ``texts`` once: its vector depends on its
        text only, so every copy gets the same bytes.

        Raises:
            EmbedError: onnxruntime failed.
        """
        if self._batch == 1:
            unique = list(dict.fromkeys(texts))
            if len(unique) < len(texts):
                rows = self._embed_each(unique)
                where = {text: i for i, text in enumerate(unique)}
                return rows[[where[text] for text in texts]]
            return self._embed_each(texts)
        return self._embed(texts, self._session, self._batch)

    def _embed_each(self, texts: Sequence[str]) -> Vectors:
        """One text per call: on parallel sessions when there are enough texts."""
        if self._threads > 1 and len(texts) >= PARALLEL_MIN:
            return self._embed_parallel(texts)
        return self._embed(texts, self._session, 1)

    def _embed_parallel(self, texts: Sequence[str]) -> Vectors:
        workers = self._side_by_side()
        shares = [list(range(k, len(texts), workers.size)) for k in range(workers.size)]
        parts = workers.pool.map(
            lambda pair: self._embed([texts[i] for i in pair[0]], pair[1], 1),
            zip(shares, workers.sessions, strict=True),
        )
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for share, rows in zip(shares, parts, strict=True):
            out[share] = rows
        return out

    def _side_by_side(self) -> _Workers:
        """The single-threaded sessions and their pool, made on first use (a server that only
        embeds queries never pays for them)."""
        with self._workers_lock:
            if self._workers is None:
                sessions = [session(self._graph, 1) for _ in range(self._threads)]
                self._locks.update({id(x): threading.Lock() for x in sessions})
                pool = ThreadPoolExecutor(self._threads, thread_name_prefix="toolscout-embed")
                self._workers = _Workers(sessions, pool)
            return self._workers

    def _helper(self) -> _Workers:
        """The second query session and its thread, made on first use (only requests of
        several intents need them)."""
        with self._workers_lock:
            if self._query_helper is None:
                helper = session(self._graph, 1)
                self._locks[id(helper)] = threading.Lock()
                pool = ThreadPoolExecutor(1, thread_name_prefix="toolscout-query")
                self._query_helper = _Workers([helper], pool)
            return self._query_helper

    def embed_query(self, texts: Sequence[str]) -> Vectors:
        """Embed queries (through the query graph when there is one).

        Raises:
            EmbedError: onnxruntime failed.
        """
        if self._split_queries and len(texts) > 1:
            return self._embed_split(texts)
        return self._embed(texts, self._query_session, self._query_batch)

    def _embed_split(self, texts: Sequence[str]) -> Vectors:
        """Several texts of one request (its intents, and the whole request when the learned
        ranker reads it): the caller embeds some on the query session while a helper thread
        embeds the rest on a second one-thread session. Each text still goes through the same
        graph alone on one thread: the same bytes as one after the other."""
        helper = self._helper()
        mine, theirs = balanced_halves([len(t) for t in texts])
        pending = helper.pool.submit(self._embed, [texts[i] for i in theirs], helper.sessions[0], 1)
        rows = self._embed([texts[i] for i in mine], self._query_session, 1)
        out = np.zeros((len(texts), rows.shape[1]), dtype=np.float32)
        out[mine] = rows
        out[theirs] = pending.result()
        return out

    def _embed(self, texts: Sequence[str], session: Any, batch: int) -> Vectors:
        if not texts:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        rows: list[Vectors] = []
        try:
            for start in range(0, len(order), batch):
                chunk = order[start : start + batch]
                rows.append(self._run([texts[i] or " " for i in chunk], session))
        except EmbedError:
            raise
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EmbedError(f"local embedding failed: {exc}") from exc
        stacked = np.concatenate(rows, axis=0)
        out = np.zeros_like(stacked)
        out[order] = stacked
        return out


def balanced_halves(sizes: Sequence[int]) -> tuple[list[int], list[int]]:
    """Two shares of texts (indexes) of about equal work: the longest first, each to the
    lighter share (the caller's on a tie). A text's cost grows with its length, and a request
    embedded with its whole text holds one text about as long as all the others together: that
    one goes to one session, its intents to the other."""
    shares: tuple[list[int], list[int]] = ([], [])
    loads = [0, 0]
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        side = 0 if loads[0] <= loads[1] else 1
        shares[side].append(i)
        loads[side] += sizes[i]
    return shares


def load_folder(path: str, threads: int) -> OnnxEmbedder:
    """``onnx:PATH``: a folder with one ``*.onnx`` graph (``model.onnx`` preferred), a
    ``tokenizer.json`` and optionally ``config.json``. The index records the graph's sha256, so
    an index built with other weights refuses to open.

    Raises:
        ConfigError: the folder or one of its files is missing or malformed.
        EmbedError: the graph or tokenizer cannot be loaded.
    """
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise ConfigError(
            f"embed_model 'onnx:{path}': {folder} is not a folder; give a folder holding an "
            f"ONNX graph and tokenizer.json"
        )
    graph = folder / "model.onnx"
    if not graph.is_file():
        graphs = sorted(folder.glob("*.onnx"))
        if len(graphs) != 1:
            raise ConfigError(
                f"embed_model 'onnx:{path}': expected model.onnx or exactly one *.onnx file in "
                f"{folder}, found {len(graphs)}"
            )
        graph = graphs[0]
    tokenizer = folder / "tokenizer.json"
    if not tokenizer.is_file():
        raise ConfigError(f"embed_model 'onnx:{path}': {tokenizer} is missing")
    config = OnnxConfig.read(folder / "config.json")
    # The name changes with the graph's bytes and with the pooling config: either changes vectors.
    graph_sha256 = sha256_of(graph)
    digest = hashlib.sha256(f"{graph_sha256}\x00{config}".encode()).hexdigest()
    name = f"onnx:{folder.name}:{digest[:16]}"
    model = OnnxEmbedder(name, graph, tokenizer, config, threads)
    model.graph_sha256 = graph_sha256
    return model
