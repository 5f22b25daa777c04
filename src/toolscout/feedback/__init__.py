"""Learning from use: what agents called after which request, whether it worked, and the
nearest-request memory that ranks those tools higher for similar requests."""

from toolscout.feedback.memory import MemoryParams, RequestMemory
from toolscout.feedback.service import OUTCOMES, FeedbackConfig, FeedbackService, check_outcome

__all__ = [
    "OUTCOMES",
    "FeedbackConfig",
    "FeedbackService",
    "MemoryParams",
    "RequestMemory",
    "check_outcome",
]
