"""The LLM protocol and its client for any OpenAI-compatible chat API.

Callers (the skill classifier, the enrichers) ask for JSON matching a pydantic model and get a
validated instance back, or an :class:`~toolscout.errors.EnrichError`. The client is
pydantic-ai's ``OpenAIChatModel`` behind an ``OpenAIProvider`` pointed at the configured base
URL; the answer is requested as prompted JSON (the schema goes into the instructions and the
reply text is parsed and validated), which every OpenAI-compatible server supports, unlike
tool calls or ``response_format``. Failed calls - transport errors, timeouts, replies that do
not validate - are retried with exponential back-off.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pydantic import BaseModel

from toolscout.errors import ConfigError, EnrichError

if TYPE_CHECKING:
    from toolscout.config import Settings

log = logging.getLogger("toolscout.llm")

M = TypeVar("M", bound=BaseModel)


class LLM(Protocol):
    """Something that answers a prompt with JSON validated against a pydantic model."""

    @property
    def name(self) -> str:
        """Model identifier, recorded with what it produced."""
        ...

    def complete_json(self, prompt: str, schema: type[M]) -> M:
        """Answer ``prompt`` with an instance of ``schema``.

        Raises:
            EnrichError: no valid answer after the configured retries.
        """
        ...


class OpenAICompatibleLLM:
    """An OpenAI-compatible chat endpoint (OpenAI, vLLM, llama.cpp server, Ollama, ...).

    Thread-safe: each call runs its own event loop and HTTP client, so batch jobs may call it
    from worker threads.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 30.0,
        retries: int = 2,
        backoff: float = 0.5,
    ) -> None:
        if not base_url or not model:
            raise ConfigError("llm_base_url and llm_model are both required for the LLM client")
        if timeout <= 0 or retries < 0 or backoff < 0:
            raise ConfigError("llm_timeout must be > 0 and llm_retries >= 0")
        self.base_url = base_url
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        # Usage is recorded for the enrichment stats: totals, plus the tokens of the
        # last successful call per thread so a caller can charge them to what it made.
        self.calls = 0
        self.tokens = 0
        self._usage_lock = threading.Lock()
        self._local = threading.local()

    @property
    def name(self) -> str:
        return f"openai-compatible:{self.model}"

    def _once(self, prompt: str, schema: type[M]) -> M:
        from openai import AsyncOpenAI
        from pydantic_ai import Agent, PromptedOutput
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        # Our own retry loop owns back-off; the SDK's would multiply the attempts.
        client = AsyncOpenAI(
            base_url=self.base_url,
            api_key=self.api_key or "unused",
            timeout=self.timeout,
            max_retries=0,
        )
        model = OpenAIChatModel(self.model, provider=OpenAIProvider(openai_client=client))
        agent: Agent[None, Any] = Agent(model, output_type=PromptedOutput(schema), retries=0)

        async def run() -> Any:
            # A loop per call, closed with its HTTP client: run_sync from worker threads
            # leaves both open (ResourceWarnings under concurrent enrichment).
            async with client:
                return await agent.run(
                    prompt, model_settings={"temperature": 0.0, "timeout": self.timeout}
                )

        result = asyncio.run(run())
        used = int(result.usage.total_tokens or 0)
        with self._usage_lock:
            self.tokens += used
        self._local.last_tokens = used
        output = result.output
        if not isinstance(output, schema):
            raise EnrichError(f"the model answered {type(output).__name__}, not {schema.__name__}")
        return output

    def complete_json(self, prompt: str, schema: type[M]) -> M:
        """Raises: EnrichError after ``retries + 1`` failed attempts (the last cause chained)."""
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            with self._usage_lock:
                self.calls += 1
            try:
                return self._once(prompt, schema)
            except Exception as exc:  # transport, timeout, invalid JSON: all retryable here
                last = exc
                log.info("LLM attempt %d/%d failed: %s", attempt + 1, self.retries + 1, exc)
        raise EnrichError(
            f"{self.name} at {self.base_url}: no valid answer after {self.retries + 1} "
            f"attempts: {type(last).__name__}: {last}"
        ) from last

    def last_tokens(self) -> int:
        """Tokens the last successful call made from this thread used (0 before any)."""
        return int(getattr(self._local, "last_tokens", 0))


def open_llm(settings: Settings) -> OpenAICompatibleLLM | None:
    """The configured LLM, or None when ``llm_base_url``/``llm_model`` are not set.

    Raises:
        ConfigError: only one of them is set, or bad timeout/retries.
    """
    base_url = getattr(settings, "llm_base_url", None)
    model = getattr(settings, "llm_model", None)
    if not base_url and not model:
        return None
    if not base_url or not model:
        missing = "llm_base_url" if not base_url else "llm_model"
        raise ConfigError(f"{missing}: set both llm_base_url and llm_model to use an LLM")
    return OpenAICompatibleLLM(
        base_url=base_url,
        model=model,
        api_key=settings.llm_api_key,
        timeout=settings.llm_timeout,
        retries=settings.llm_retries,
    )
