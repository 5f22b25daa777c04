"""The query encoder's graph: the packaged MiniLM with int8 matrix products.

The packaged graph stores its weights as int8 but multiplies in float32 (each weight is cast
and scaled back before its MatMul), so it runs at float32 speed. Re-quantising it dynamically
(int8 weights per output channel, activations quantised per call, ``MatMulInteger``) makes a
query embed ~2.4x faster on a CPU with VNNI, with vectors at cosine 0.991 (min 0.98) to the
packaged graph's on real queries and retrieval quality unchanged within noise
(docs/BENCHMARKS.md §4). Tool texts are still embedded by the packaged graph, so the choice of
query encoder never changes an index.

The graph is derived from the packaged one by onnxruntime's own optimiser and quantiser (no
download), written once into the cache directory, and checked against a pinned sha256: the same
pinned versions always give the same bytes, so every machine ranks alike.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path

from toolscout.errors import EmbedError

log = logging.getLogger("toolscout.embed")

#: sha256 of the derived graph with the pinned onnxruntime 1.31.1 and onnx 1.23.2.
QUERY_GRAPH_SHA256 = "9e80251537633bab7d98c9a4f07070371d83f1d28e6994a1f5d93c53de3c5454"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def int8_query_graph(source: Path, source_sha256: str, cache_dir: Path) -> Path:
    """The dynamically quantised graph of ``source`` (derived on first use, then cached).

    Raises:
        EmbedError: the derivation failed or gave other bytes than the pinned versions give.
    """
    target = cache_dir / "models" / f"minilm-l6-query-int8-{source_sha256[:16]}.onnx"
    if target.is_file() and sha256_of(target) == QUERY_GRAPH_SHA256:
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            derived = _derive(source, Path(tmp))
            digest = sha256_of(derived)
            if digest != QUERY_GRAPH_SHA256:
                raise EmbedError(
                    f"the int8 query graph derived from {source} has sha256 {digest}, expected "
                    f"{QUERY_GRAPH_SHA256}: install the pinned onnx and onnxruntime versions "
                    f"(requirements.lock), or set query_encoder = 'exact'"
                )
            os.replace(derived, target)  # atomic: concurrent first uses write the same bytes
    except EmbedError:
        raise
    except Exception as exc:  # onnx / onnxruntime raise their own untyped errors
        raise EmbedError(
            f"cannot derive the int8 query graph into {target.parent}: {exc}; "
            f"set query_encoder = 'exact' to use the packaged graph for queries"
        ) from exc
    log.info("derived the int8 query graph %s", target)
    return target


def _derive(source: Path, workdir: Path) -> Path:
    import onnxruntime as ort
    from onnxruntime.quantization import (  # type: ignore[import-untyped]
        QuantType,
        quantize_dynamic,
    )

    folded = workdir / "folded.onnx"
    opts = ort.SessionOptions()
    # Basic level = constant folding only: the int8 initialisers become float32 weights, and
    # the graph stays portable (no fused, CPU-specific operators).
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    opts.optimized_model_filepath = str(folded)
    opts.log_severity_level = 3
    ort.InferenceSession(str(source), sess_options=opts, providers=["CPUExecutionProvider"])
    out = workdir / "query-int8.onnx"
    root = logging.getLogger()
    was = root.disabled
    root.disabled = True  # the quantiser logs a pre-processing hint through the root logger
    try:
        quantize_dynamic(str(folded), str(out), weight_type=QuantType.QInt8, per_channel=True)
    finally:
        root.disabled = was
    return out
