"""The web console served by ``toolscout serve`` at ``/`` (templates and vendored assets)."""

from toolscout.api.console.routes import console_router

__all__ = ["console_router"]
