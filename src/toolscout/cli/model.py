"""``toolscout model install|show``: the larger embedding model of the quality tier."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from toolscout.cli import app, console
from toolscout.cli.options import JsonOption, settings
from toolscout.embed.installed import QUALITY, install, model_folder, verify

model_app = typer.Typer(help="Embedding models installed beside the packaged one.")
app.add_typer(model_app, name="model")

TierArgument = Annotated[str, typer.Argument(help="The tier: quality (all-mpnet-base-v2).")]
DirOption = Annotated[
    Path | None,
    typer.Option("--models-dir", help="Where models are installed (default: models_dir setting)."),
]


def _say(text: str) -> None:
    console.print(text, highlight=False, markup=False, soft_wrap=True)


@model_app.command("install")
def install_command(
    tier: TierArgument = QUALITY,
    models_dir: DirOption = None,
    precision: Annotated[
        str,
        typer.Option(help="auto (int8 only where it matches torch on this CPU), int8 or fp32."),
    ] = "auto",
    threads: Annotated[int, typer.Option(min=1, help="torch threads for the export.")] = 2,
    force: Annotated[bool, typer.Option("--force", help="Install again over an install.")] = False,
) -> None:
    """Download the tier's hash-pinned wheels, export the model to ONNX and install it
    (torch and transformers are needed for this once: pip install 'toolscout[quality]')."""
    root = models_dir or Path(settings(None).models_dir)
    manifest, fresh = install(root, tier, precision=precision, threads=threads, force=force)
    where = model_folder(root, tier)
    _say(f"{'installed' if fresh else 'already installed'}: {manifest.name} in {where}")
    _say(f'use it: embed_model = "local:{tier}" (TOOLSCOUT_EMBED_MODEL=local:{tier}), then')
    _say("rebuild each index with `toolscout index --rebuild PATH...`")


@model_app.command("show")
def show_command(
    tier: TierArgument = QUALITY, models_dir: DirOption = None, as_json: JsonOption = False
) -> None:
    """Check an installed tier's files against its manifest and print the manifest."""
    root = models_dir or Path(settings(None).models_dir)
    where = model_folder(root, tier)
    manifest = verify(where, tier)
    if as_json:
        console.print_json(json.dumps({"folder": str(where), **asdict(manifest)}))
        return
    _say(f"{manifest.name} in {where} ({manifest.precision}); files match the manifest")
