"""Access control shared by the HTTP API and the MCP HTTP transport.

Policy (the same on every route, whatever the transport):

* writes need the admin key (``settings.api_key`` / ``TOOLSCOUT_API_KEY``); with no admin key
  configured, writes are disabled (403), never open;
* reads need ``settings.read_key`` (or the admin key) when a read key is configured;
* without a read key, reads are open to loopback clients only: a server bound to another
  interface must be given a read key to answer remote reads.

Keys arrive as ``Authorization: Bearer KEY`` and are compared in constant time.
"""

from __future__ import annotations

import hmac
import ipaddress
from dataclasses import dataclass
from enum import StrEnum

from toolscout.errors import AccessDenied


class Access(StrEnum):
    """What an operation does: reads never change the index, writes do."""

    READ = "read"
    WRITE = "write"


@dataclass(frozen=True)
class KeyPolicy:
    """The configured keys; ``None`` means not configured."""

    api_key: str | None = None
    read_key: str | None = None


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer ...`` header, or None."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def is_loopback(host: str | None) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``; unknown peers are not loopback."""
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _matches(token: str | None, key: str | None) -> bool:
    if token is None or not key:
        return False
    return hmac.compare_digest(token.encode("utf-8"), key.encode("utf-8"))


def check_access(
    policy: KeyPolicy, access: Access, token: str | None, client_host: str | None
) -> None:
    """Allow the request or raise.

    Raises:
        AccessDenied: status 401 when a (valid) key is missing, 403 when the operation is
            disabled by configuration.
    """
    if access is Access.WRITE:
        if not policy.api_key:
            raise AccessDenied(
                "writes are disabled: set TOOLSCOUT_API_KEY (or api_key in the configuration "
                "file) on the server, then send 'Authorization: Bearer <key>'",
                status=403,
            )
        if not _matches(token, policy.api_key):
            raise AccessDenied("this operation needs the admin key: 'Authorization: Bearer <key>'")
        return
    if policy.read_key:
        if not (_matches(token, policy.read_key) or _matches(token, policy.api_key)):
            raise AccessDenied("reads need the read key: send 'Authorization: Bearer <key>'")
        return
    if is_loopback(client_host) or _matches(token, policy.api_key):
        return
    raise AccessDenied(
        "reads are open to loopback clients only; configure read_key (TOOLSCOUT_READ_KEY) "
        "on the server to serve remote clients",
        status=403,
    )
