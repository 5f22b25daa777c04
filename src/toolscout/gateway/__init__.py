"""The gateway: one MCP server in front of the upstream servers toolscout indexes.

``Gateway`` (service.py) describes and calls tools over pooled upstream sessions
(sessions.py) under a policy (policy.py), with an audit log (audit.py); server.py puts it on
the MCP server, exposure.py keeps found tools in its tool list under the provider-valid
names of :mod:`toolscout.formats` (re-exported here).
"""

from toolscout.formats.names import NameMap, provider_name, tool_id_from_name
from toolscout.gateway.audit import AuditLog
from toolscout.gateway.policy import Policy
from toolscout.gateway.service import Gateway, SchemaAnswer
from toolscout.gateway.sessions import Limits

__all__ = [
    "AuditLog",
    "Gateway",
    "Limits",
    "NameMap",
    "Policy",
    "SchemaAnswer",
    "provider_name",
    "tool_id_from_name",
]
