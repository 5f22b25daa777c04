"""Who may do what in the web console: the REST API's key policy, spoken by a browser.

Reads follow :func:`toolscout.api.auth.check_access` exactly as the read API does. A browser
cannot attach ``Authorization`` to a link or a form, so the console adds one thing: a person
types the admin key once (``POST /console/session``), the server checks it with the same policy
and answers with a cookie holding an HMAC of the key - never the key itself. A write is allowed
when the request carries the admin key as a bearer token (as on REST) or that cookie; the cookie
is ``HttpOnly`` and ``SameSite=Strict``, and cookie-authenticated writes from another site are
refused, so a foreign page cannot post through a signed-in browser.
"""

from __future__ import annotations

import hashlib
import hmac

from fastapi import Request

from toolscout.api.auth import Access, KeyPolicy, bearer_token, check_access
from toolscout.errors import AccessDenied

COOKIE = "toolscout_console"
_CONTEXT = b"toolscout-console-session-v1"


def session_token(api_key: str) -> str:
    """The cookie value that stands for ``api_key`` (changes when the key changes)."""
    return hmac.new(api_key.encode("utf-8"), _CONTEXT, hashlib.sha256).hexdigest()


def _policy(request: Request) -> KeyPolicy:
    policy: KeyPolicy = request.app.state.policy
    return policy


def _client(request: Request) -> str | None:
    return request.client.host if request.client else None


def has_session(request: Request) -> bool:
    """True when the request carries a valid admin cookie."""
    policy = _policy(request)
    cookie = request.cookies.get(COOKIE)
    if not policy.api_key or not cookie:
        return False
    return hmac.compare_digest(cookie.encode("utf-8"), session_token(policy.api_key).encode())


def _same_site(request: Request) -> bool:
    """A browser's own statement that the request comes from this site (absent: not a
    browser, or an old one; SameSite=Strict covers those)."""
    site = request.headers.get("sec-fetch-site")
    return site in (None, "same-origin", "none")


def check_read(request: Request) -> None:
    """Allow a page view as the read API would, or with the admin cookie.

    Raises:
        AccessDenied: as :func:`~toolscout.api.auth.check_access` for reads.
    """
    if has_session(request):
        return
    token = bearer_token(request.headers.get("authorization"))
    check_access(_policy(request), Access.READ, token, _client(request))


def is_admin(request: Request) -> bool:
    """True when a write would be allowed (used to show or hide admin controls)."""
    try:
        check_write(request)
    except AccessDenied:
        return False
    return True


def check_write(request: Request) -> None:
    """Allow a write with the admin key (bearer) or the admin cookie from this site.

    Raises:
        AccessDenied: 403 when writes are disabled (no admin key configured) or the request
            comes from another site; 401 when the key is missing or wrong.
    """
    token = bearer_token(request.headers.get("authorization"))
    if token is None and has_session(request):
        if not _same_site(request):
            raise AccessDenied("console writes must come from the console's own pages", status=403)
        return
    check_access(_policy(request), Access.WRITE, token, _client(request))


def check_key(request: Request, key: str) -> None:
    """Check a typed admin key with the write policy.

    Raises:
        AccessDenied: as :func:`check_write`.
    """
    check_access(_policy(request), Access.WRITE, key.strip() or None, _client(request))
