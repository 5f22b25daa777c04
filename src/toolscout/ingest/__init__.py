"""Tool sources: catalog files now; MCP servers and Python tool directories plug in beside them."""

from toolscout.ingest.jsonfile import CatalogFile, load_catalog
from toolscout.ingest.sources import Source

__all__ = ["CatalogFile", "Source", "load_catalog"]
