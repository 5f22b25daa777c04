"""Export a sentence-transformers model folder to an ``onnx:`` folder (torch is needed here only).

The result holds ``model.onnx``, ``tokenizer.json`` and ``config.json`` (pooling, normalisation,
max tokens), which :func:`toolscout.embed.onnx.load_folder` loads. Nothing else in toolscout
imports this module: searching and indexing run on onnxruntime alone.

``precision="auto"`` keeps a dynamic int8 graph (int8 weights per output channel,
``MatMulInteger``) only if its vectors stay within cosine :data:`MIN_INT8_COSINE` of torch's on
this machine, and otherwise writes the fp32 graph (4x larger, exact). onnxruntime's int8 kernels
differ by CPU: without VNNI instructions (AVX2 only) the u8 x s8 products can saturate, which
all-mpnet-base-v2's large activations do (cosine 0.01-0.07 on an AVX2-only EPYC) while MiniLM's
do not (0.99). ``"int8"`` or ``"fp32"`` forces one.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np

from toolscout.embed.onnx import load_folder
from toolscout.embed.quantize import sha256_of
from toolscout.errors import ConfigError

#: Texts the exported graph is checked on against torch.
PROBE = [
    "file a bug in the repo",
    "what's the weather in Berlin",
    "github create issue (github): Create a new issue in a repository. Parameters: owner, repo.",
    "convert 100 USD to EUR and email the result to my accountant",
]
#: Below this (worst probe text), ``precision="auto"`` falls back to the fp32 graph.
MIN_INT8_COSINE = 0.98
PRECISIONS = ("auto", "int8", "fp32")
#: What the export imports, and how to install it.
EXPORT_PACKAGES = ("torch", "transformers")
EXPORT_INSTALL = "pip install 'toolscout[quality]' (or, in a clone, `scripts/setup --train`)"


def require_export_packages(packages: tuple[str, ...] = EXPORT_PACKAGES) -> None:
    """Raises: ConfigError naming the missing packages and the command that installs them."""
    missing = [name for name in packages if find_spec(name) is None]
    if missing:
        raise ConfigError(
            f"exporting a model to ONNX needs {' and '.join(missing)} (once, for the export "
            f"only; searching never does): {EXPORT_INSTALL}"
        )


def pooling_of(src: Path) -> tuple[str, int]:
    """The folder's pooling (``mean`` or ``cls``) and its maximum sequence length."""
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
    """Write ``out/{model.onnx,tokenizer.json,config.json}``; return the graph's sha256.

    Raises:
        ConfigError: torch or transformers is missing, or ``precision`` is unknown.
    """
    if precision not in PRECISIONS:
        raise ConfigError(f"precision must be one of {', '.join(PRECISIONS)}; got {precision!r}")
    require_export_packages()
    import torch

    torch.set_num_threads(threads)
    pooling, default_tokens = pooling_of(src)
    model, names = _load_torch_model(src)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        _trace(model, names, fp32)
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
            from onnxruntime.quantization import (  # type: ignore[import-untyped]
                QuantType,
                quantize_dynamic,
            )

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
    digest = sha256_of(graph)
    print(f"{graph} sha256 {digest}", flush=True)
    return digest


def _load_torch_model(src: Path) -> tuple[Any, list[str]]:
    from transformers import AutoModel

    # eager attention traces to plain ops; the default (sdpa) mask code can bake in shapes
    model = AutoModel.from_pretrained(str(src), attn_implementation="eager").eval()
    names = ["input_ids", "attention_mask"]
    if getattr(model.config, "type_vocab_size", 0) > 1 or model.config.model_type == "bert":
        names.append("token_type_ids")
    return model, names


def _trace(model: Any, names: list[str], target: Path) -> None:
    import torch

    class ByName(torch.nn.Module):  # type: ignore[misc]  # torch is untyped where mypy runs
        """Calls the model with named inputs (its positional order differs across versions)."""

        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, *inputs: Any) -> Any:
            return self.inner(**dict(zip(names, inputs, strict=True))).last_hidden_state

    ids = torch.ones((2, 16), dtype=torch.long)
    args = (ids, torch.ones_like(ids), torch.zeros_like(ids))[: len(names)]
    torch.onnx.export(
        ByName().eval(),  # a module in training mode would leave dropout on afterwards
        args,
        str(target),
        input_names=names,
        output_names=["last_hidden_state"],
        dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]},
        opset_version=17,
        dynamo=False,
    )


def verify(model: Any, out: Path, pooling: str) -> float:
    """Worst cosine between the torch model's vectors and the graph's (printed; returned)."""
    import torch
    from tokenizers import Tokenizer

    model.eval()
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    tok.no_padding()  # some tokenizer.json files pad to a fixed length; toolscout never pads
    ref = []
    with torch.inference_mode():
        for text in PROBE:
            ids = torch.tensor([tok.encode(text).ids])
            hidden = model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
            vec = hidden[0, 0] if pooling == "cls" else hidden[0].mean(0)
            ref.append(torch.nn.functional.normalize(vec, dim=0).numpy())
    got = load_folder(str(out), 1).embed(PROBE)
    cosines = (np.stack(ref) * got).sum(axis=1)
    print(
        f"torch fp32 vs ONNX graph cosine: min {cosines.min():.4f} mean {cosines.mean():.4f}",
        flush=True,
    )
    return float(cosines.min())
