"""What the legs said about a search: the features the calibration's logistic models read.

A hit's features (:class:`Evidence`; a search mode has only those its legs give,
:data:`MODE_FEATURES`):

* ``cosine``: the hit's cosine similarity to the request (best over its intents);
* ``standout``: that cosine minus the median cosine of the vector leg's candidates, i.e. how far
  the tool stands out from the crowd for this request;
* ``lexical``: the hit's BM25 score in units of the largest IDF, ``ln(N + 1)``;
* ``relative``: the fused score relative to the request's best (the ranking's own view).

A request's (:class:`RequestEvidence`, from :func:`request_evidence`) read the legs as they came
back, before any fusion or re-ordering. :mod:`toolscout.search.calibration` turns both into
probabilities.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toolscout.models import Scored

#: The features each search mode has (a ``bm25`` search embeds nothing, a ``vector`` search runs
#: no lexical leg), in the order of a model's coefficients.
MODE_FEATURES: dict[str, tuple[str, ...]] = {
    "hybrid": ("cosine", "standout", "lexical", "relative"),
    "vector": ("cosine", "standout", "relative"),
    "bm25": ("lexical", "relative"),
}
#: What a request model may read (:class:`RequestEvidence`); each mode's model names its own
#: features in ``calibration.json``, chosen on dev requests by bench/fit/calibrate.py.
REQUEST_FIELDS = ("cosine", "gap", "lead", "lexical", "lexical_gap", "size", "cosine_size")


@dataclass(frozen=True)
class Evidence:
    """What the legs said about one hit (see the module docstring); None: leg not run."""

    cosine: float | None
    standout: float | None
    lexical: float | None
    relative: float

    def values(self, names: Sequence[str]) -> list[float]:
        return [float(getattr(self, n) or 0.0) for n in names]


@dataclass(frozen=True)
class RequestEvidence:
    """What the legs said about a request as a whole (see :func:`request_evidence`)."""

    #: The vector leg's closest tool's cosine (0: the leg did not run or found nothing).
    cosine: float
    #: That cosine minus the next closest tool's.
    gap: float
    #: That cosine minus the mean of the next nine closest tools' (how far it stands out).
    lead: float
    #: The best BM25 score in units of the largest IDF, ``ln(N + 1)`` (0: no lexical hit).
    lexical: float
    #: That score minus the next best one's, in the same units.
    lexical_gap: float
    #: log10 of the number of tools searched.
    size: float

    @property
    def cosine_size(self) -> float:
        return self.cosine * self.size

    def values(self, names: Sequence[str]) -> list[float]:
        return [float(getattr(self, n)) for n in names]


def request_evidence(
    lexical: Sequence[Scored], vector: Sequence[Scored], tools: int
) -> RequestEvidence | None:
    """The request model's input from the legs' runs (best first, before fusion), over an
    index of ``tools`` tools. None: neither leg found anything."""
    if not lexical and not vector:
        return None
    idf = math.log(max(tools, 1) + 1.0)
    cosine = vector[0].score if vector else 0.0
    lex = lexical[0].score / idf if lexical else 0.0
    return RequestEvidence(
        cosine=cosine,
        gap=cosine - vector[1].score if len(vector) > 1 else 0.0,
        lead=cosine - float(np.mean([h.score for h in vector[1:10]])) if len(vector) > 1 else 0.0,
        lexical=lex,
        lexical_gap=lex - lexical[1].score / idf if len(lexical) > 1 else lex,
        size=math.log10(max(tools, 1)),
    )
