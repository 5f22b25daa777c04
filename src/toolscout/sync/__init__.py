"""Orchestration above the engine: sync sources into an index, watch them, rebuild an index.

Ingest (below the engine) reads sources; this package decides what an index should hold after
each listing and drives the engine to get there.
"""
