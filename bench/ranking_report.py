"""bench/ranking.py's report: its console lines, its markdown tables and its reliability
diagrams, from the JSON report the script builds."""

from __future__ import annotations

from typing import Any


def line(name: str, split: str, row: dict[str, Any]) -> str:
    """One set and split on the console: every system's figures, the default's sign tests,
    each scored system's calibration."""
    cells = "  ".join(
        f"{k} {100 * v['hit@3']:5.1f}/{100 * v['ndcg@10']:5.1f}" for k, v in row["systems"].items()
    )
    signs = "  ".join(
        f"{k} h3 +{v['hit@3']['won']}/-{v['hit@3']['lost']} p={v['hit@3']['p']:.2g}"
        for k, v in row["default_vs"].items()
    )
    cal = "  ".join(
        f"{k}: ECE top-1 {c['ece_top1']:.3f} (floor {c['floor_top1']:.3f}) top-5 "
        f"{c['ece_top5']:.3f} (floor {c['floor_top5']:.3f}) (top-1 mean score "
        f"{c['mean_top1']:.3f}, right {c['right_top1']:.3f})"
        for k, c in row["calibration"].items()
    )
    return (
        f"{name:18s} {split:4s} n={row['requests']:4d}  {cells}\n{'':24s}vs: {signs}\n{'':24s}{cal}"
    )


def markdown(report: dict[str, Any]) -> str:
    """One table row per set and split: hit@3 / nDCG@10 of each system."""
    names: list[str] = []
    lines: list[str] = []
    for set_name, splits in report["sets"].items():
        for split, row in splits.items():
            names = names or list(row["systems"])
            cells = " | ".join(
                f"{100 * row['systems'][n]['hit@3']:.1f} / {100 * row['systems'][n]['ndcg@10']:.1f}"
                for n in names
            )
            lines.append(f"| {set_name} {split} ({row['requests']}) | {cells} |")
    head = "| set (requests) | " + " | ".join(names) + " |"
    rule = "|---" * (len(names) + 1) + "|"
    return "\n".join([head, rule, *lines])


def calibration_markdown(report: dict[str, Any]) -> str:
    """One table row per set and split: each scored system's ECE of the first hit / the first
    five, its sampling floor in brackets."""
    names: list[str] = []
    lines: list[str] = []
    for set_name, splits in report["sets"].items():
        for split, row in splits.items():
            cal = row["calibration"]
            names = names or list(cal)
            cells = " | ".join(
                f"{cal[n]['ece_top1']:.3f} / {cal[n]['ece_top5']:.3f} "
                f"({cal[n]['floor_top1']:.3f} / {cal[n]['floor_top5']:.3f})"
                if n in cal
                else "-"
                for n in names
            )
            lines.append(f"| {set_name} {split} ({row['requests']}) | {cells} |")
    head = "| set (requests) | " + " | ".join(names) + " |"
    rule = "|---" * (len(names) + 1) + "|"
    title = "ECE of the first hit / the first five (sampling floor in brackets)"
    return "\n".join([title, head, rule, *lines])


#: Colours for a diagram read outside the console (which styles its plots from its stylesheet).
FIGURE_STYLE = (
    "<style>.bar.s0{fill:#3b6ea8}.bar.s1{fill:#d08c2b}.grid{stroke:#ddd}"
    ".diag{stroke:#555;stroke-dasharray:4 3;stroke-width:1.5}text{font:11px sans-serif;fill:#444}"
    "</style>"
)


def pooled_bins(report: dict[str, Any], system: str, depth: str, split: str) -> list[list[float]]:
    """One system's reliability bins over every set's ``split`` (each bin's hits added up)."""
    acc: dict[float, list[float]] = {}
    for splits in report["sets"].values():
        cal = splits.get(split, {}).get("calibration", {}).get(system)
        for lo, m, r, n in cal[f"bins_{depth}"] if cal else []:
            row = acc.setdefault(lo, [0.0, 0.0, 0.0])
            row[0], row[1], row[2] = row[0] + m * n, row[1] + r * n, row[2] + n
    return [[lo, m / n, r / n, n] for lo, (m, r, n) in sorted(acc.items())]


def reliability_figure(report: dict[str, Any], system: str, split: str = "dev") -> str:
    """An SVG reliability diagram of a system's first hit and first five over every set."""
    from toolscout.api.console.plots import reliability_diagram

    series = [
        (name, [(lo, m, r, int(n)) for lo, m, r, n in pooled_bins(report, system, depth, split)])
        for name, depth in (("first hit", "top1"), ("first five", "top5"))
    ]
    svg = str(reliability_diagram(f"{system} scores, every {split} set", series))
    head = svg.index(">") + 1
    return svg[:head] + FIGURE_STYLE + svg[head:]
