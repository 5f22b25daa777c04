"""Plots as inline SVG, drawn on the server: no JavaScript library, no asset to fetch.

Each plot is an ``<svg role="img">`` with a ``<title>`` and a ``<desc>`` for screen readers and
a ``<title>`` on every bar (the browser shows it on hover); pages put the same figures in a
table beside each plot. Colours come from CSS classes (``s0``, ``s1``: the first and second
report), so the stylesheet decides them.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

WIDTH, HEIGHT = 480, 240
LEFT, RIGHT, TOP, BOTTOM = 44, 22, 14, 46


@dataclass(frozen=True)
class Series:
    """One named row of values (one report)."""

    name: str
    values: tuple[float | None, ...]


def _fmt(value: float) -> str:
    return f"{value:.1f}"


def _frame(title: str, desc: str, body: list[str]) -> Markup:
    uid = "p" + hashlib.sha1(f"{title}\0{desc}".encode()).hexdigest()[:10]
    head = (
        f'<svg class="plot" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-labelledby="{uid}t {uid}d" xmlns="http://www.w3.org/2000/svg">'
        f'<title id="{uid}t">{escape(title)}</title><desc id="{uid}d">{escape(desc)}</desc>'
    )
    return Markup(head + "".join(body) + "</svg>")


def _y_axis(top_value: float, unit: str) -> list[str]:
    # Whole-number steps for counts (top is 1, 2 or 5 times a power of ten), quarters for %.
    ticks = 4 if unit == "%" else (int(top_value) if top_value <= 5 else 5)
    out: list[str] = []
    plot_h = HEIGHT - TOP - BOTTOM
    for i in range(ticks + 1):
        v = top_value * i / ticks
        y = HEIGHT - BOTTOM - plot_h * i / ticks
        label = f"{v:.0f}{unit}" if top_value >= ticks else f"{v:.2g}{unit}"

        out.append(
            f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{_fmt(y)}" y2="{_fmt(y)}"/>'
            f'<text class="tick" x="{LEFT - 4}" y="{_fmt(y + 4)}" text-anchor="end">'
            f"{escape(label)}</text>"
        )
    return out


def bar_chart(
    title: str, categories: Sequence[str], series: Sequence[Series], *, percent: bool = True
) -> Markup:
    """Grouped vertical bars: one group per category, one bar per series.

    With ``percent`` the values are fractions drawn on a 0-100 % axis.
    """
    scale = 100.0 if percent else 1.0
    values = [v * scale for s in series for v in s.values if v is not None]
    top = 100.0 if percent else _nice(max(values, default=1.0))
    plot_w = WIDTH - LEFT - RIGHT
    plot_h = HEIGHT - TOP - BOTTOM
    body = _y_axis(top, "%" if percent else "")
    group_w = plot_w / max(1, len(categories))
    bar_w = group_w * 0.8 / max(1, len(series))
    for ci, cat in enumerate(categories):
        x0 = LEFT + ci * group_w + group_w * 0.1
        for si, s in enumerate(series):
            v = s.values[ci] if ci < len(s.values) else None
            if v is None:
                continue
            h = plot_h * min(1.0, max(0.0, v * scale / top))
            x = x0 + si * bar_w
            tip = f"{s.name}, {cat}: {v * scale:.1f}{'%' if percent else ''}"
            body.append(
                f'<rect class="bar s{si % 4}" x="{_fmt(x)}" y="{_fmt(HEIGHT - BOTTOM - h)}" '
                f'width="{_fmt(max(1.0, bar_w - 2))}" height="{_fmt(h)}">'
                f"<title>{escape(tip)}</title></rect>"
            )
        cx = LEFT + ci * group_w + group_w / 2
        body.append(
            f'<text class="label" x="{_fmt(cx)}" y="{HEIGHT - BOTTOM + 14}" '
            f'text-anchor="middle">{escape(_short(cat))}</text>'
        )
    body.extend(_legend(series))
    desc = "; ".join(f"{s.name}: " + ", ".join(_pairs(categories, s.values, scale)) for s in series)
    return _frame(title, desc, body)


def _pairs(categories: Sequence[str], values: Sequence[float | None], scale: float) -> list[str]:
    return [
        f"{c} {v * scale:.1f}" for c, v in zip(categories, values, strict=False) if v is not None
    ]


def histogram(
    title: str, samples: Sequence[float], edges: Sequence[float], *, index: int
) -> Markup:
    """Counts of ``samples`` (ms) in the bins between ``edges``; the last bin holds the rest.

    Two reports drawn with the same ``edges`` can be compared bar for bar.
    """
    counts = bin_counts(samples, edges)
    top = _nice(max(counts, default=1) or 1)
    plot_w = WIDTH - LEFT - RIGHT
    plot_h = HEIGHT - TOP - BOTTOM
    body = _y_axis(top, "")
    n = max(1, len(counts))
    w = plot_w / n
    for i, c in enumerate(counts):
        h = plot_h * c / top
        lo, hi = edges[i], edges[i + 1] if i + 1 < len(edges) else math.inf
        span = f"{lo:.3g}-{hi:.3g} ms" if math.isfinite(hi) else f">= {lo:.3g} ms"
        body.append(
            f'<rect class="bar s{index % 4}" x="{_fmt(LEFT + i * w + 1)}" '
            f'y="{_fmt(HEIGHT - BOTTOM - h)}" width="{_fmt(max(1.0, w - 2))}" height="{_fmt(h)}">'
            f"<title>{escape(f'{span}: {c} queries')}</title></rect>"
        )
    for i in range(0, len(edges), max(1, len(edges) // 6)):
        x = LEFT + i * w
        body.append(
            f'<text class="label" x="{_fmt(x)}" y="{HEIGHT - BOTTOM + 14}" text-anchor="middle">'
            f"{edges[i]:.3g}</text>"
        )
    body.append(
        f'<text class="label" x="{LEFT + plot_w / 2}" y="{HEIGHT - 6}" text-anchor="middle">'
        "search time (ms)</text>"
    )
    desc = f"{len(samples)} queries; " + ", ".join(
        f"{edges[i]:.3g} ms: {c}" for i, c in enumerate(counts)
    )
    return _frame(title, desc, body)


def reliability_diagram(
    title: str, series: Sequence[tuple[str, Sequence[tuple[float, float, float, int]]]]
) -> Markup:
    """A reliability diagram: hits binned by score (ten bins of 0.1), per series (report) a bar
    per bin as high as the share of its hits that were right, and the diagonal where that share
    equals the score. ``series``: name and bins (lower edge, mean score, share right, hits)."""
    plot_w = WIDTH - LEFT - RIGHT
    plot_h = HEIGHT - TOP - BOTTOM
    body = _y_axis(100.0, "%")
    bin_w = plot_w / 10
    bar_w = bin_w * 0.8 / max(1, len(series))
    for si, (name, bins) in enumerate(series):
        for lo, mean_score, right, hits in bins:
            b = min(9, max(0, round(lo * 10)))
            h = plot_h * min(1.0, max(0.0, right))
            x = LEFT + b * bin_w + bin_w * 0.1 + si * bar_w
            tip = (
                f"{name}, scores {lo:.1f}-{lo + 0.1:.1f}: {hits} hits, mean score "
                f"{mean_score:.2f}, right {100 * right:.0f}%"
            )
            body.append(
                f'<rect class="bar s{si % 4}" x="{_fmt(x)}" y="{_fmt(HEIGHT - BOTTOM - h)}" '
                f'width="{_fmt(max(1.0, bar_w - 2))}" height="{_fmt(h)}">'
                f"<title>{escape(tip)}</title></rect>"
            )
    body.append(
        f'<line class="diag" x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{TOP}">'
        "<title>perfectly calibrated: share right = score</title></line>"
    )
    for i in range(0, 11, 2):
        body.append(
            f'<text class="label" x="{_fmt(LEFT + i * bin_w)}" y="{HEIGHT - BOTTOM + 14}" '
            f'text-anchor="middle">{i / 10:.1f}</text>'
        )
    body.extend(_legend([Series(name, ()) for name, _ in series]))
    desc = "; ".join(
        f"{name}: "
        + ", ".join(
            f"{lo:.1f}-{lo + 0.1:.1f} {hits} hits {100 * r:.0f}% right" for lo, _, r, hits in bins
        )
        for name, bins in series
    )
    return _frame(title, desc or "no scored hits", body)


def shared_edges(sample_sets: Sequence[Sequence[float]], bins: int = 12) -> list[float]:
    """Bin edges covering every set up to its combined 98th percentile (the rest goes into the
    last bin), so one slow outlier does not squash the plot."""
    values = sorted(v for s in sample_sets for v in s)
    if not values:
        return [0.0, 1.0]
    high = values[max(0, math.ceil(0.98 * len(values)) - 1)]
    low = values[0]
    step = max((high - low) / bins, 1e-3)
    return [low + i * step for i in range(bins + 1)]


def bin_counts(samples: Sequence[float], edges: Sequence[float]) -> list[int]:
    """How many samples fall in each bin ``[edges[i], edges[i+1])``; the last bin also holds
    everything at or above the last edge."""
    counts = [0] * max(1, len(edges) - 1)
    for v in samples:
        i = 0
        while i + 1 < len(edges) - 1 and v >= edges[i + 1]:
            i += 1
        counts[i] += 1
    return counts


def _legend(series: Sequence[Series]) -> list[str]:
    out: list[str] = []
    x = LEFT
    for i, s in enumerate(series):
        out.append(
            f'<rect class="bar s{i % 4}" x="{x}" y="{HEIGHT - 18}" width="10" height="10"/>'
            f'<text class="legend" x="{x + 14}" y="{HEIGHT - 9}">'
            f"{escape(_short(s.name, 28))}</text>"
        )
        x += 14 + 7 * min(28, len(s.name)) + 16
    return out


def _short(text: str, n: int = 14) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _nice(value: float) -> float:
    """The next 1, 2 or 5 times a power of ten at or above ``value``."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for m in (1, 2, 5, 10):
        if m * power >= value:
            return float(m * power)
    return float(10 * power)
