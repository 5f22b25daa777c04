"""Semantic enrichment: server profiles and richer tool text (offline rules or an LLM)."""
