"""Pick the enricher the settings name: ``none``, ``offline`` (default) or ``llm``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolscout.enrich.base import Enricher
from toolscout.enrich.offline import OfflineEnricher

if TYPE_CHECKING:
    from toolscout.config import Settings


def open_enricher(settings: Settings) -> Enricher | None:
    """The configured enricher, or None when enrichment is off.

    Raises:
        ConfigError: ``enrich = llm`` without ``llm_base_url``/``llm_model``.
    """
    if settings.enrich == "none":
        return None
    if settings.enrich == "offline":
        return OfflineEnricher()
    from toolscout.enrich.llm_enricher import open_llm_enricher

    return open_llm_enricher(settings)
