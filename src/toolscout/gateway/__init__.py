"""The gateway: describe and call the tools of the upstream MCP servers toolscout indexes.

``Gateway`` (service.py) calls tools over pooled upstream sessions (sessions.py) under a policy
(policy.py), with an audit log (audit.py), and REST APIs indexed from OpenAPI documents over
HTTP (http.py); catalog.py knows which indexed tools it can call,
exposure.py and budget.py keep found tools in its tool list within a token budget. The MCP
surface that puts it in front of an agent is :mod:`toolscout.api.mcp_gateway`.
"""

from toolscout.gateway.audit import AuditLog
from toolscout.gateway.http import HttpApi
from toolscout.gateway.policy import Policy
from toolscout.gateway.service import Gateway, SchemaAnswer
from toolscout.gateway.sessions import Limits

__all__ = ["AuditLog", "Gateway", "HttpApi", "Limits", "Policy", "SchemaAnswer"]
