"""Export a sentence-transformers model folder to an ``onnx:PATH`` folder.

    scripts/setup --train                                 # torch + transformers, export only
    python bench/fit/export_onnx.py SRC_FOLDER OUT_FOLDER  # e.g. all-mpnet-base-v2 (docs/MODEL.md)

``SRC_FOLDER`` is a Hugging Face / sentence-transformers model folder (config.json, weights,
tokenizer.json; ``1_Pooling/config.json`` and ``sentence_bert_config.json`` when present). The
result holds ``model.onnx``, ``tokenizer.json`` and ``config.json`` (pooling, normalisation, max
tokens), which is what ``embed_model = "onnx:OUT_FOLDER"`` loads. Prints the graph's sha256 and
the cosine between the torch model's and the graph's vectors on a few texts. The export itself
is the library's (``toolscout.embed.export``, which ``toolscout model install`` also runs);
``--precision auto`` (the default) keeps the int8 graph only where it matches torch on this CPU.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from toolscout.embed.export import PRECISIONS, export_folder

__all__ = ["PRECISIONS", "export_folder"]


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
