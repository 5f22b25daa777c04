"""Getting OpenAPI documents: the one a source names and the ones its ``$ref``s name beside it.

**Fetched documents are cached.** A document fetched by URL is kept in a cache folder with the
validators its server sent (``ETag``, ``Last-Modified``); the next fetch sends them back
(``If-None-Match``, ``If-Modified-Since``) and a ``304 Not Modified`` answer re-uses the kept
body without transferring it. A server that sends no validators has the new body compared with
the kept one by SHA-256. Either way the listing a sync applies is complete, so every tool of an
unchanged document keeps its hash and nothing is re-embedded. The cache is an optimisation
only: a missing, corrupt or unwritable cache means a plain fetch.

**External references are read within the document's scope.** ``other.yaml#/X`` next to a file
document is read from the document's folder or below; ``schemas.json#/X`` or
``/specs/common.yaml`` in a fetched document is fetched from the document's own scheme, host
and port. Anything else (``../`` out of the folder, ``file:`` from a URL document, another
host) is refused: a document is data that may come from someone else, and following its
references must not make toolscout read the operator's other files into the index (their text
would land in tool descriptions) or send requests to hosts the operator never named (internal
addresses from a fetched document). Each document a read opens is opened once, however many
references name it, and a read opens at most :data:`MAX_DOCUMENTS` of them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

import httpx
import yaml

from toolscout.errors import IngestError

log = logging.getLogger("toolscout.ingest.openapi")

MAX_DOCUMENT_BYTES = 50 * 1024 * 1024
FETCH_TIMEOUT = 30.0
#: The cache folder's name under the settings' ``cache_dir``.
OPENAPI_CACHE = "openapi"
#: Documents besides the first one read may open through external references.
MAX_DOCUMENTS = 200

FetchStatus = Literal["fetched", "not modified", "same content"]


def is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def parse_document(data: bytes, location: str) -> Any:
    """JSON, else YAML (a superset of it).

    Raises:
        IngestError: neither parses.
    """
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise IngestError(f"{location}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        pass
    try:
        return yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError) as exc:
        raise IngestError(f"{location}: neither JSON nor YAML: {exc}") from exc


@dataclass(frozen=True)
class Cached:
    """A kept document and the validators its server sent with it."""

    body: bytes
    etag: str | None
    last_modified: str | None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.body).hexdigest()


class DocumentCache:
    """Fetched documents, two files per URL under ``folder``: ``<key>.json`` (the URL, its
    validators and the body's SHA-256) and ``<key>.body``; the key is the URL's SHA-256."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder).expanduser()

    def _paths(self, url: str) -> tuple[Path, Path]:
        key = hashlib.sha256(url.encode()).hexdigest()
        return self.folder / f"{key}.json", self.folder / f"{key}.body"

    def get(self, url: str) -> Cached | None:
        """The kept document of ``url``; None when there is none or it does not check out."""
        meta_path, body_path = self._paths(url)
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            body = body_path.read_bytes()
        except (OSError, ValueError):
            return None
        if not isinstance(meta, dict) or meta.get("url") != url:
            return None
        kept = Cached(body, _opt_str(meta.get("etag")), _opt_str(meta.get("last_modified")))
        return kept if meta.get("sha256") == kept.sha256 else None

    def put(self, url: str, kept: Cached) -> None:
        """Keep ``kept`` for ``url`` (each file replaced whole; a failure is only logged)."""
        meta_path, body_path = self._paths(url)
        meta = {
            "url": url,
            "etag": kept.etag,
            "last_modified": kept.last_modified,
            "sha256": kept.sha256,
        }
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            for path, data in ((body_path, kept.body), (meta_path, json.dumps(meta).encode())):
                tmp = path.with_suffix(path.suffix + ".tmp")
                tmp.write_bytes(data)
                os.replace(tmp, path)
        except OSError as exc:
            log.warning("openapi: cannot keep %s in the cache %s: %s", url, self.folder, exc)


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class Fetched:
    """A document's body and how it was obtained."""

    body: bytes
    status: FetchStatus


def _conditional_headers(kept: Cached | None) -> dict[str, str]:
    headers: dict[str, str] = {}
    if kept is not None and kept.etag:
        headers["If-None-Match"] = kept.etag
    if kept is not None and kept.last_modified:
        headers["If-Modified-Since"] = kept.last_modified
    return headers


def fetch(
    url: str, *, timeout: float = FETCH_TIMEOUT, cache: DocumentCache | None = None
) -> Fetched:
    """The body of ``url`` (at most :data:`MAX_DOCUMENT_BYTES`), asked for conditionally when
    ``cache`` keeps an earlier answer (see the module docstring).

    Raises:
        IngestError: the request failed, answered non-2xx (other than 304 to a conditional
            request), or the body is too large.
    """
    kept = cache.get(url) if cache is not None else None
    try:
        with httpx.stream(
            "GET", url, headers=_conditional_headers(kept), timeout=timeout, follow_redirects=True
        ) as response:
            if response.status_code == 304 and kept is not None:
                return Fetched(kept.body, "not modified")
            if not response.is_success:
                raise IngestError(f"{url}: HTTP {response.status_code} fetching the document")
            body = bytearray()
            for chunk in response.iter_bytes():
                body.extend(chunk)
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise IngestError(f"{url}: over the {MAX_DOCUMENT_BYTES}-byte document limit")
            headers = response.headers
    except httpx.HTTPError as exc:
        raise IngestError(f"{url}: cannot fetch the document: {exc}") from exc
    fresh = Cached(bytes(body), headers.get("etag"), headers.get("last-modified"))
    same = kept is not None and kept.sha256 == fresh.sha256
    if cache is not None and (not same or kept != fresh):
        cache.put(url, fresh)
    return Fetched(fresh.body, "same content" if same else "fetched")


def read_file(path: Path) -> bytes:
    """The bytes of a document file (at most :data:`MAX_DOCUMENT_BYTES`).

    Raises:
        IngestError: it cannot be read or is too large.
    """
    try:
        if path.stat().st_size > MAX_DOCUMENT_BYTES:
            raise IngestError(f"{path}: over the {MAX_DOCUMENT_BYTES}-byte document limit")
        return path.read_bytes()
    except OSError as exc:
        raise IngestError(f"{path}: cannot read: {exc.strerror or exc}") from exc


class OutOfScope(IngestError):
    """An external reference to a document outside the scope the module docstring gives."""


class Documents:
    """The documents one read of ``location`` may open (see the module docstring).

    ``uri`` is the base every reference of the first document is resolved against: its URL,
    or its file's ``file:`` URI.
    """

    def __init__(
        self,
        location: str,
        *,
        cache: DocumentCache | None = None,
        timeout: float = FETCH_TIMEOUT,
    ) -> None:
        self.location = location
        self.cache = cache
        self.timeout = timeout
        self.uri = location if is_url(location) else Path(location).resolve().as_uri()
        self.fetch_status: FetchStatus | None = None
        self._opened: dict[str, Any | IngestError] = {}

    def first(self) -> bytes:
        """The bytes of the document the source names.

        Raises:
            IngestError: it cannot be fetched or read.
        """
        if is_url(self.location):
            fetched = fetch(self.location, timeout=self.timeout, cache=self.cache)
            self.fetch_status = fetched.status
            return fetched.body
        return read_file(Path(self.location))

    def retrieve(self, uri: str) -> Any:
        """The parsed document at ``uri`` (absolute, no fragment), opened at most once.

        Raises:
            IngestError: out of scope (:class:`OutOfScope`), too many documents, or it cannot
                be read or parsed.
        """
        if uri not in self._opened:
            self._opened[uri] = self._open(uri)
        found = self._opened[uri]
        if isinstance(found, IngestError):
            raise found
        return found

    def _open(self, uri: str) -> Any | IngestError:
        if len(self._opened) >= MAX_DOCUMENTS:
            return IngestError(f"{uri}: over {MAX_DOCUMENTS} referenced documents in one read")
        try:
            if is_url(self.uri):
                self._check_same_origin(uri)
                data = fetch(uri, timeout=self.timeout, cache=self.cache).body
            else:
                data = read_file(self._local_path(uri))
            return parse_document(data, uri)
        except IngestError as exc:
            return exc

    def _check_same_origin(self, uri: str) -> None:
        mine, theirs = urlsplit(self.uri), urlsplit(uri)
        if (theirs.scheme, theirs.netloc) != (mine.scheme, mine.netloc):
            raise OutOfScope(
                f"{uri}: only documents on the document's own host "
                f"({mine.scheme}://{mine.netloc}) are fetched"
            )

    def _local_path(self, uri: str) -> Path:
        parts = urlsplit(uri)
        folder = Path(self.location).resolve().parent
        if parts.scheme != "file":
            raise OutOfScope(f"{uri}: a file document's references are read from files only")
        path = Path(unquote(parts.path)).resolve()
        if folder not in path.parents:
            raise OutOfScope(
                f"{path}: outside the document's folder {folder}; only files beside the "
                "document or below it are read"
            )
        return path
