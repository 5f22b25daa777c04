"""Export a sentence-transformers model folder to an ``onnx:PATH`` folder with an int8 graph.

    scripts/setup --train                                 # torch + transformers, export only
    python bench/fit/export_onnx.py SRC_FOLDER OUT_FOLDER  # e.g. all-mpnet-base-v2 (docs/MODEL.md)

``SRC_FOLDER`` is a Hugging Face / sentence-transformers model folder (config.json, weights,
tokenizer.json; ``1_Pooling/config.json`` and ``sentence_bert_config.json`` when present). The
result holds ``model.onnx`` (dynamic int8: int8 weights per output channel, ``MatMulInteger``),
``tokenizer.json`` and ``config.json`` (pooling, normalisation, max tokens), which is what
``embed_model = "onnx:OUT_FOLDER"`` loads. Prints the graph's sha256 and the cosine between the
torch model's and the graph's vectors on a few texts.

``--precision auto`` (the default) keeps the int8 graph only if its vectors stay within cosine
``MIN_INT8_COSINE`` of torch's on this machine, and otherwise writes the fp32 graph (4x larger,
exact) and says so. onnxruntime's int8 kernels differ by CPU: without VNNI instructions (AVX2
only) the u8 x s8 products can saturate, which all-mpnet-base-v2's large activations do (cosine
0.01-0.07 on an AVX2-only EPYC) while MiniLM's do not (0.99). ``--precision int8`` or ``fp32``
forces one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

PROBE = [
    "file a bug in the repo",
    "what's the weather in Berlin",
    "github create issue (github): Create a new issue in a repository. Parameters: owner, repo.",
    "convert 100 USD to EUR and email the result to my accountant",
]

#: Below this (worst probe text), ``--precision auto`` falls back to the fp32 graph.
MIN_INT8_COSINE = 0.98
#: ``--precision`` choices (module docstring).
PRECISIONS = ("auto", "int8", "fp32")


def pooling_of(src: Path) -> tuple[str, int]:
    pooling, max_tokens = "mean", 256
    pool_cfg = src / "1_Pooling" / "config.json"
    if pool_cfg.is_file():
        raw = json.loads(pool_cfg.read_text())
        if raw.get("pooling_mode_cls_token"):
            pooling = "cls"
    st_cfg = src / "sentence_bert_config.json"
    if st_cfg.is_file():
        max_tokens = int(json.loads(st_cfg.read_text()).get("max_seq_length", max_tokens))
    return pooling, max_tokens


def export_folder(
    src: Path,
    out: Path,
    *,
    max_tokens: int | None = None,
    threads: int = 2,
    precision: str = "auto",
) -> str:
    """Write ``out/{model.onnx,tokenizer.json,config.json}``; return the graph's sha256."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel

    torch.set_num_threads(threads)
    pooling, default_tokens = pooling_of(src)
    # eager attention traces to plain ops; the default (sdpa) mask code can bake in shapes
    model = AutoModel.from_pretrained(str(src), attn_implementation="eager").eval()
    names = ["input_ids", "attention_mask"]
    if getattr(model.config, "type_vocab_size", 0) > 1 or model.config.model_type == "bert":
        names.append("token_type_ids")
    ids = torch.ones((2, 16), dtype=torch.long)
    args = (ids, torch.ones_like(ids), torch.zeros_like(ids))[: len(names)]

    class ByName(torch.nn.Module):
        """Calls the model with named inputs (its positional order differs across versions)."""

        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            out = self.inner(**dict(zip(names, inputs, strict=True)))
            return out.last_hidden_state  # type: ignore[no-any-return]

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        torch.onnx.export(
            ByName().eval(),  # a module in training mode would leave dropout on afterwards
            args,
            str(fp32),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]},
            opset_version=17,
            dynamo=False,
        )
        shutil.copy(src / "tokenizer.json", out / "tokenizer.json")
        config = {
            "pooling": pooling,
            "normalize": True,
            "max_tokens": max_tokens or default_tokens,
            "output": "last_hidden_state",
        }
        (out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
        graph = out / "model.onnx"
        if precision == "fp32":
            shutil.copy(fp32, graph)
        else:
            quantize_dynamic(str(fp32), str(graph), weight_type=QuantType.QInt8, per_channel=True)
        worst = verify(model, out, pooling)
        if precision == "auto" and worst < MIN_INT8_COSINE:
            print(
                f"int8 graph rejected: its vectors differ from torch's on this CPU (worst cosine "
                f"{worst:.3f} < {MIN_INT8_COSINE}); writing the fp32 graph instead",
                flush=True,
            )
            shutil.copy(fp32, graph)
            verify(model, out, pooling)
    digest = hashlib.sha256(graph.read_bytes()).hexdigest()
    print(f"{graph} sha256 {digest}", flush=True)
    return digest


def verify(model: object, out: Path, pooling: str) -> float:
    """Worst cosine between the torch model's vectors and the graph's (printed; returned)."""
    import torch
    from tokenizers import Tokenizer

    from toolscout.embed.onnx import load_folder

    model.eval()  # type: ignore[attr-defined]
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    tok.no_padding()  # some tokenizer.json files pad to a fixed length; toolscout never pads
    ref = []
    with torch.inference_mode():
        for text in PROBE:
            enc = tok.encode(text)
            ids = torch.tensor([enc.ids])
            hidden = model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state  # type: ignore[operator]
            vec = hidden[0, 0] if pooling == "cls" else hidden[0].mean(0)
            ref.append(torch.nn.functional.normalize(vec, dim=0).numpy())
    got = load_folder(str(out), 1).embed(PROBE)
    cosines = (np.stack(ref) * got).sum(axis=1)
    print(
        f"torch fp32 vs ONNX graph cosine: min {cosines.min():.4f} mean {cosines.mean():.4f}",
        flush=True,
    )
    return float(cosines.min())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("src", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="auto",
        help="auto: int8 unless it is inaccurate on this CPU, then fp32",
    )
    args = parser.parse_args()
    export_folder(
        args.src,
        args.out,
        max_tokens=args.max_tokens,
        threads=args.threads,
        precision=args.precision,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
