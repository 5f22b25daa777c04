"""The engine a :class:`~toolscout.config.Settings` describes: thread limits, the embedder stack,
the store, the search configuration, the enricher and the skills LLM, put together once for
:meth:`toolscout.engine.Engine.open`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolscout.config import Settings, load_settings
from toolscout.embed.stack import open_embedder_stack
from toolscout.enrich.factory import open_enricher
from toolscout.enrich.llm import open_llm
from toolscout.feedback.service import FeedbackConfig
from toolscout.search.config import DEFAULT_FIELD_WEIGHTS, SearchConfig
from toolscout.store.base import open_store

if TYPE_CHECKING:
    from toolscout.engine import Engine


def open_engine(cls: type[Engine], settings: Settings | None, overrides: dict[str, Any]) -> Engine:
    """Raises: ConfigError, StoreError, EmbedError. The store is closed again on failure."""
    s = settings if settings is not None else load_settings(**overrides)
    if s.blas_threads:
        # One query's mat-vec is too small to share: waking BLAS threads (and evicting the
        # matrix from cache between them) cost ~2x at 10k tools (docs/BENCHMARKS.md §2).
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=s.blas_threads, user_api="blas")
    embedder = open_embedder_stack(s)
    store = open_store(s.db)
    config = SearchConfig(
        fusion=s.fusion,  # type: ignore[arg-type]  # validated by Settings
        learned_ranker=s.learned_ranker,
        rrf_k=s.rrf_k,
        lexical_weight=s.lexical_weight,
        vector_weight=s.vector_weight,
        field_weights=tuple(s.field_weights) if s.field_weights else DEFAULT_FIELD_WEIGHTS,
    )
    try:
        return cls(
            store,
            embedder,
            config=config,
            enricher=open_enricher(s),
            enrich_max_age_days=s.enrich_max_age_days,
            result_cache_size=s.result_cache_size,
            skill_llm=open_llm(s),
            skills_starter=s.skills_starter,
            classify_concurrency=s.llm_concurrency,
            feedback=FeedbackConfig(enabled=s.feedback, keep=s.feedback_keep),
        )
    except Exception:
        store.close()
        raise
