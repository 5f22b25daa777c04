"""Tool names both providers accept, and the way back to toolscout ids.

Anthropic and OpenAI take tool names matching ``^[a-zA-Z0-9_-]{1,64}$``; toolscout ids
(``github::create_issue``, ``files::resource:file:///a.txt``) never do. :func:`provider_name`
encodes an id so that it stays readable and decodes exactly:

* ASCII letters and digits stay;
* ``::`` (the server separator) becomes ``__``;
* ``_`` stays, unless it touches another ``_`` or a ``:`` (then it is escaped);
* every other byte of the UTF-8 text becomes ``-`` and two lowercase hex digits.

So ``github::create_issue`` is ``github__create_issue`` and ``fs::read-file`` is
``fs__read-2dfile``. An unescaped ``_`` run is then either one original ``_`` or pairs from
``::``, which is what makes :func:`tool_id_from_name` exact. An encoding longer than 64
characters keeps its first 52 and ends in ``-z`` plus 10 hex digits of the id's SHA-256
(``z`` is no hex digit, so such a name is never mistaken for an encoding); those names decode
only through a :class:`NameMap`, which every conversion returns.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_NAME = 64
_HASHED = "-z"
_HASH_DIGITS = 10
_ALNUM = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_UNDERSCORE = ord("_")
_COLON = ord(":")
_ESCAPE = re.compile(r"-([0-9a-f]{2})")


def _encode(tool_id: str) -> str:
    raw = tool_id.encode("utf-8")
    out: list[str] = []
    i = 0
    while i < len(raw):
        byte = raw[i]
        if byte == _COLON and i + 1 < len(raw) and raw[i + 1] == _COLON:
            out.append("__")
            i += 2
            continue
        if byte in _ALNUM:
            out.append(chr(byte))
        elif byte == _UNDERSCORE and not _touches_separator(raw, i):
            out.append("_")
        else:
            out.append(f"-{byte:02x}")
        i += 1
    return "".join(out)


def _touches_separator(raw: bytes, i: int) -> bool:
    before = raw[i - 1] if i > 0 else None
    after = raw[i + 1] if i + 1 < len(raw) else None
    return before in (_UNDERSCORE, _COLON) or after in (_UNDERSCORE, _COLON)


def provider_name(tool_id: str) -> str:
    """A name valid for Anthropic and OpenAI tools that maps back to ``tool_id``.

    Raises:
        ValueError: ``tool_id`` is empty.
    """
    if not tool_id:
        raise ValueError("a tool id must not be empty")
    encoded = _encode(tool_id)
    if len(encoded) <= MAX_NAME:
        return encoded
    keep = MAX_NAME - len(_HASHED) - _HASH_DIGITS
    cut = encoded[:keep]
    # Never end inside an escape: the readable prefix must stay decodable by eye.
    dash = cut.rfind("-", max(0, keep - 2))
    if dash != -1:
        cut = cut[:dash]
    digest = hashlib.sha256(tool_id.encode("utf-8")).hexdigest()[:_HASH_DIGITS]
    return f"{cut}{_HASHED}{digest}"


def tool_id_from_name(name: str) -> str | None:
    """The toolscout id a :func:`provider_name` encodes; ``None`` for a hashed (long) name or
    a string that is no encoding (look those up in a :class:`NameMap`)."""
    if not NAME_PATTERN.match(name) or _HASHED in name:
        return None
    out = bytearray()
    i = 0
    while i < len(name):
        char = name[i]
        if char == "-":
            match = _ESCAPE.match(name, i)
            if match is None:
                return None
            out.append(int(match.group(1), 16))
            i += 3
        elif char == "_":
            run = len(name) - i - len(name[i:].lstrip("_"))
            if run == 1:
                out.append(_UNDERSCORE)
            elif run % 2 == 0:
                out.extend(b":" * run)
            else:
                return None
            i += run
        else:
            out.append(ord(char))
            i += 1
    try:
        decoded = out.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return decoded if provider_name(decoded) == name else None


class NameMap:
    """Provider names of a set of tools, both ways. Two ids can never share a name."""

    def __init__(self, tool_ids: Iterable[str] = ()) -> None:
        self._by_name: dict[str, str] = {}
        self._by_id: dict[str, str] = {}
        for tool_id in tool_ids:
            self.add(tool_id)

    def add(self, tool_id: str) -> str:
        """Register ``tool_id`` and return its provider name."""
        name = self._by_id.get(tool_id)
        if name is None:
            name = provider_name(tool_id)
            self._by_id[tool_id] = name
            self._by_name[name] = tool_id
        return name

    def name(self, tool_id: str) -> str:
        """The provider name of ``tool_id`` (registering it)."""
        return self.add(tool_id)

    def tool_id(self, name: str) -> str | None:
        """The toolscout id behind a provider name, or ``None`` when it is not one of ours."""
        return self._by_name.get(name) or tool_id_from_name(name)

    def as_dict(self) -> dict[str, str]:
        """``{provider name: toolscout id}``, e.g. to keep beside a request to a provider."""
        return dict(self._by_name)
