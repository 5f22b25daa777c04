"""Where the Qdrant vector leg lives and how its collections are built, from one URL.

::

    qdrant://HOST:6333/COLLECTION            a Qdrant server (REST); API key from QDRANT_API_KEY
    qdrants://HOST:6333/COLLECTION           the same over HTTPS
    qdrant+local:///ABS/FOLDER/COLLECTION    Qdrant Edge: Qdrant's engine in process, on disk

Options ride on the query string: ``hnsw_m`` (16), ``hnsw_ef_construct`` (200), ``ef`` (search
breadth, 256), ``quantization`` (``int8`` or ``none``; int8 keeps a scalar-quantised copy in RAM
and re-scores candidates with the original vectors), ``on_disk`` (0/1: original vectors on disk),
``timeout`` (seconds, 10), ``engine`` (local folders only: ``edge``, the default, or ``client``
for qdrant-client's local mode, an exact reference implementation of the server's API). The skill
centroids go to ``COLLECTION_skills``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from toolscout.config.settings import qdrant_api_key
from toolscout.errors import ConfigError

_INT_OPTIONS = {"hnsw_m": 16, "hnsw_ef_construct": 200, "ef": 256, "on_disk": 0, "timeout": 10}
_SCHEMES = ("qdrant", "qdrants", "qdrant+local")


@dataclass(frozen=True)
class QdrantTarget:
    """A parsed ``vectors`` URL. ``path`` is set in local mode, ``host``/``port`` otherwise."""

    display: str
    collection: str
    host: str | None
    port: int
    https: bool
    path: Path | None
    api_key: str | None
    hnsw_m: int
    hnsw_ef_construct: int
    ef: int
    quantization: str
    on_disk: bool
    timeout: int
    #: ``edge`` (Qdrant Edge, local folders) or ``client`` (qdrant-client: servers, or local mode).
    engine: str = "client"

    @property
    def skills_collection(self) -> str:
        return self.collection + "_skills"


def _fail(url: str, why: str) -> ConfigError:
    return ConfigError(
        f"vectors: {why} in {url!r}; expected qdrant://HOST:PORT/COLLECTION, "
        f"qdrants://HOST:PORT/COLLECTION or qdrant+local:///ABSOLUTE/FOLDER/COLLECTION"
    )


def _int_options(url: str, options: dict[str, str]) -> dict[str, int]:
    values: dict[str, int] = {}
    for key, default in _INT_OPTIONS.items():
        raw = options.get(key)
        try:
            values[key] = default if raw is None else int(raw)
        except ValueError:
            raise _fail(url, f"option {key}={raw!r} is not an integer") from None
        if values[key] < 0:
            raise _fail(url, f"option {key} is negative")
    return values


def parse_qdrant_url(url: str) -> QdrantTarget:
    """Raises: ConfigError naming what is wrong with the URL and the accepted forms."""
    parts = urlsplit(url)
    if parts.scheme not in _SCHEMES:
        raise _fail(url, f"unknown scheme {parts.scheme!r}")
    options = dict(parse_qsl(parts.query, keep_blank_values=True))
    unknown = sorted(set(options) - set(_INT_OPTIONS) - {"quantization", "engine"})
    if unknown:
        raise _fail(url, f"unknown option(s) {', '.join(unknown)}")
    values = _int_options(url, options)
    quantization = options.get("quantization", "int8")
    if quantization not in ("int8", "none"):
        raise _fail(url, f"quantization={quantization!r} is not int8 or none")
    local = parts.scheme == "qdrant+local"
    engine = options.get("engine", "edge" if local else "client")
    if engine not in ("edge", "client") or (engine == "edge" and not local):
        raise _fail(url, f"engine={engine!r} is not edge (local folders) or client")
    path_part = parts.path.rstrip("/")
    collection = path_part.rsplit("/", 1)[-1]
    if not collection or not collection.replace("_", "").replace("-", "").isalnum():
        raise _fail(url, "the collection name (last path segment) is missing or not a-z, 0-9, _, -")
    folder: Path | None = None
    host: str | None = None
    port = 0
    if local:
        parent = path_part.rsplit("/", 1)[0]
        if parts.netloc or not parent.startswith("/"):
            raise _fail(url, "local mode needs an absolute folder before the collection name")
        folder = Path(parent)
    else:
        if not parts.hostname:
            raise _fail(url, "the host is missing")
        host, port = parts.hostname, parts.port or 6333
    return QdrantTarget(
        display=url,
        collection=collection,
        host=host,
        port=port,
        https=parts.scheme == "qdrants",
        path=folder,
        api_key=qdrant_api_key(),
        hnsw_m=values["hnsw_m"],
        hnsw_ef_construct=values["hnsw_ef_construct"],
        ef=values["ef"],
        quantization=quantization,
        on_disk=bool(values["on_disk"]),
        timeout=values["timeout"],
        engine=engine,
    )
