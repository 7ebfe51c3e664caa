"""``canon monitor report``: what the live traffic's decisions say, as text and as an HTML
page with the trend of each principle's sampled canon rate (inline SVG, no script, no
network: the page opens from disk)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import UTC, datetime

from canon.core.online import DecisionKind, Rate, Summary

_WIDTH, _HEIGHT, _PAD = 640, 180, 36


def _share(rate: Rate) -> str:
    if rate.rate is None:
        return "n/a (nothing judged)"
    return f"{rate.rate:.1%} ({rate.held}/{rate.judged}; 95% Wilson {rate.low:.1%}-{rate.high:.1%})"


def summary_lines(summary: Summary) -> list[str]:
    """The summary for people: counts by decision, the canon rate, each principle's rate."""
    counts = ", ".join(f"{summary.counts[kind]} {kind.value}" for kind in DecisionKind)
    lines = [
        f"{summary.traces} trace(s) decided: {counts}",
        f"sampled canon rate: {_share(summary.canon)}",
    ]
    lines.extend(f"  {name} held: {_share(rate)}" for name, rate in summary.principles.items())
    lines.append(f"judge spend: ${summary.cost:.4f}")
    return lines


def summary_data(summary: Summary) -> dict[str, object]:
    """The summary as plain data (``--json``)."""

    def rate(value: Rate) -> dict[str, object]:
        return {
            "held": value.held,
            "judged": value.judged,
            "rate": value.rate,
            "low": value.low,
            "high": value.high,
        }

    return {
        "counts": {kind.value: summary.counts[kind] for kind in DecisionKind},
        "traces": summary.traces,
        "canon": rate(summary.canon),
        "principles": {name: rate(value) for name, value in summary.principles.items()},
        "cost": summary.cost,
    }


def _when(start: float) -> str:
    return datetime.fromtimestamp(start, UTC).strftime("%Y-%m-%d %H:%M")


def _plot(title: str, points: Sequence[tuple[float, Rate]]) -> str:
    """One principle's rate per period, with its Wilson band, as an SVG figure."""
    usable = [(start, rate) for start, rate in points if rate.rate is not None]
    inner_w, inner_h = _WIDTH - 2 * _PAD, _HEIGHT - 2 * _PAD
    parts = [
        f'<svg role="img" aria-label="{html.escape(title)}" width="{_WIDTH}" '
        f'height="{_HEIGHT}" viewBox="0 0 {_WIDTH} {_HEIGHT}" xmlns="http://www.w3.org/2000/svg">',
        f'<rect x="{_PAD}" y="{_PAD}" width="{inner_w}" height="{inner_h}" fill="#fafafa" '
        'stroke="#bbb"/>',
    ]
    for level in (0.0, 0.5, 1.0):
        y = _PAD + inner_h * (1 - level)
        parts.append(
            f'<line x1="{_PAD}" x2="{_PAD + inner_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
            f'<text x="{_PAD - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end">'
            f"{level:.0%}</text>"
        )
    if not usable:
        parts.append(
            f'<text x="{_WIDTH / 2}" y="{_HEIGHT / 2}" text-anchor="middle" font-size="12">'
            "nothing judged</text></svg>"
        )
        return "".join(parts)
    first, last = usable[0][0], usable[-1][0]
    span = (last - first) or 1.0

    def to_x(start: float) -> float:
        return _PAD + (inner_w * (start - first) / span if len(usable) > 1 else inner_w / 2)

    def to_y(value: float) -> float:
        return _PAD + inner_h * (1 - value)

    upper = [f"{to_x(s):.1f},{to_y(r.high):.1f}" for s, r in usable]
    lower = [f"{to_x(s):.1f},{to_y(r.low):.1f}" for s, r in reversed(usable)]
    parts.append(f'<polygon points="{" ".join(upper + lower)}" fill="#9ecae1" opacity="0.5"/>')
    line = " ".join(f"{to_x(s):.1f},{to_y(r.rate or 0):.1f}" for s, r in usable)
    parts.append(f'<polyline points="{line}" fill="none" stroke="#08519c" stroke-width="2"/>')
    for start, rate in usable:
        parts.append(
            f'<circle cx="{to_x(start):.1f}" cy="{to_y(rate.rate or 0):.1f}" r="3" fill="#08519c">'
            f"<title>{_when(start)}: {html.escape(_share(rate))}</title></circle>"
        )
    ends = [(first, "start")] if first == last else [(first, "start"), (last, "end")]
    for start, anchor in ends:  # anchored inward, so neither date is cut at the edge
        parts.append(
            f'<text x="{to_x(start):.1f}" y="{_HEIGHT - 10}" font-size="10" '
            f'text-anchor="{anchor}">{_when(start)} UTC</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def trend_page(
    summary: Summary, periods: Sequence[tuple[float, Summary]], *, source: str, period: float
) -> str:
    """The HTML page: the summary, then a plot of the canon rate and of each principle."""
    names = list(summary.principles)
    figures = [("sampled canon rate", [(s, p.canon) for s, p in periods])]
    for name in names:
        points = [(s, p.principles[name]) for s, p in periods if name in p.principles]
        figures.append((f"{name} held", points))
    body = "".join(
        f"<section><h2>{html.escape(title)}</h2>{_plot(title, points)}</section>"
        for title, points in figures
    )
    lines = "".join(f"<li>{html.escape(line)}</li>" for line in summary_lines(summary))
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        "<title>Canon: live traffic</title>"
        "<style>body{font-family:sans-serif;margin:2em;max-width:720px}"
        "h2{font-size:1em;margin:1.2em 0 0.2em}</style></head><body>"
        f"<h1>Canon: live traffic</h1><p>{html.escape(source)}; one point per "
        f"{period:g} s period, the band its 95% Wilson interval.</p>"
        f"<ul>{lines}</ul>{body}</body></html>\n"
    )
