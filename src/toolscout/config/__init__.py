"""Configuration: the only package that reads environment variables and the configuration
file. :mod:`.settings` holds :class:`Settings` (the top-level settings, their sources and
checks) and :func:`load_settings`; :mod:`.sections` the tables for MCP servers, REST APIs and
the gateway.
"""

from toolscout.config.settings import Settings, load_settings

__all__ = ["Settings", "load_settings"]
