"""The ``canon align`` report as one self-contained HTML page: per question, agreement and
calibration side by side, and a reliability diagram drawn as inline SVG (no script, nothing
fetched)."""

from __future__ import annotations

from collections.abc import Sequence

from canon.core.agreement import KAPPA_METHOD, QuestionAgreement
from canon.core.calibration import CALIBRATION_METHOD, QuestionCalibration
from canon.core.usage import UsageSummary
from canon.report.align import calibration_note, calibration_summary, kappa_text, number_text
from canon.report.html import escape, page_start

_STYLE = """
.questions td, .bins td { font-variant-numeric: tabular-nums; }
.question { border-left-color: #455a64; }
.plot { display: flex; flex-wrap: wrap; gap: 1.5rem; align-items: flex-start; }
svg.reliability { background: #fff; }
svg.reliability text { font: 11px system-ui, sans-serif; fill: #1d1d1f; }
svg.reliability .axis { stroke: #1d1d1f; stroke-width: 1; }
svg.reliability .grid { stroke: #e4e4ea; stroke-width: 1; }
svg.reliability .ideal { stroke: #757575; stroke-width: 1.5; stroke-dasharray: 5 4; }
svg.reliability .bar { fill: #90caf9; stroke: #1565c0; stroke-width: 1; }
svg.reliability .gap { fill: #ef9a9a; fill-opacity: .9; }
svg.reliability .mean { fill: #1565c0; }
.note { color: #ef6c00; }
"""

# The diagram's geometry, in SVG user units: a square plot with room for the axes' labels.
_PLOT = 300
_LEFT, _TOP, _RIGHT, _BOTTOM = 52, 24, 14, 44
_WIDTH, _HEIGHT = _LEFT + _PLOT + _RIGHT, _TOP + _PLOT + _BOTTOM


def _x(value: float) -> float:
    return round(_LEFT + value * _PLOT, 2)


def _y(value: float) -> float:
    return round(_TOP + (1.0 - value) * _PLOT, 2)


def reliability_svg(found: QuestionCalibration) -> str:
    """A reliability diagram: per bin of top-label confidence, a bar as high as the share
    of answers matching the person, the gap to the bin's mean confidence shaded, the mean
    confidence marked, the count above; the dashed diagonal is perfect calibration."""
    parts = [
        f'<svg class="reliability" data-question="{escape(found.question)}" '
        f'xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" '
        f'viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img" '
        f'aria-label="reliability diagram of {escape(found.label)}">',
        f"<title>reliability diagram of {escape(found.label)}</title>",
    ]
    for step in range(6):
        tick = step / 5
        parts.append(
            f'<line class="grid" x1="{_x(0)}" y1="{_y(tick)}" x2="{_x(1)}" y2="{_y(tick)}"/>'
        )
        parts.append(
            f'<text x="{_x(0) - 6}" y="{_y(tick) + 4}" text-anchor="end">{tick:.1f}</text>'
        )
        parts.append(
            f'<text x="{_x(tick)}" y="{_y(0) + 16}" text-anchor="middle">{tick:.1f}</text>'
        )
    for b in found.bins:
        if not b.count or b.accuracy is None or b.confidence is None:
            continue
        left, right = _x(b.low), _x(b.high)
        top = _y(b.accuracy)
        tip = (
            f"confidence {b.low:.1f}-{b.high:.1f}: {b.count} answer(s), mean confidence "
            f"{b.confidence:.2f}, matching the person {b.accuracy:.2f}"
        )
        parts.append(
            f'<rect class="bar" data-n="{b.count}" x="{left}" y="{top}" '
            f'width="{round(right - left, 2)}" height="{round(_y(0) - top, 2)}">'
            f"<title>{tip}</title></rect>"
        )
        high, low = max(b.accuracy, b.confidence), min(b.accuracy, b.confidence)
        if high > low:
            parts.append(
                f'<rect class="gap" x="{left}" y="{_y(high)}" width="{round(right - left, 2)}" '
                f'height="{round(_y(low) - _y(high), 2)}"/>'
            )
        parts.append(
            f'<line class="mean" x1="{left}" y1="{_y(b.confidence)}" x2="{right}" '
            f'y2="{_y(b.confidence)}" stroke="#1565c0" stroke-width="2"/>'
        )
        parts.append(
            f'<text class="count" x="{round((left + right) / 2, 2)}" '
            f'y="{_y(high) - 4}" text-anchor="middle">{b.count}</text>'
        )
    parts += [
        f'<line class="ideal" x1="{_x(0)}" y1="{_y(0)}" x2="{_x(1)}" y2="{_y(1)}"/>',
        f'<line class="axis" x1="{_x(0)}" y1="{_y(0)}" x2="{_x(1)}" y2="{_y(0)}"/>',
        f'<line class="axis" x1="{_x(0)}" y1="{_y(0)}" x2="{_x(0)}" y2="{_y(1)}"/>',
        f'<text x="{_x(0.5)}" y="{_HEIGHT - 8}" text-anchor="middle">'
        "judge's confidence in its answer</text>",
        f'<text x="14" y="{_y(0.5)}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_y(0.5)})">share matching the person</text>',
        "</svg>",
    ]
    return "".join(parts)


def _bins_table(found: QuestionCalibration) -> str:
    rows = "".join(
        f'<tr><td>{b.low:.1f}-{b.high:.1f}</td><td class="num">{b.count}</td>'
        f'<td class="num">{number_text(b.confidence, 2)}</td>'
        f'<td class="num">{number_text(b.accuracy, 2)}</td></tr>'
        for b in found.bins
        if b.count
    )
    return (
        '<table class="bins"><thead><tr><th>confidence</th><th>n</th><th>mean confidence</th>'
        f"<th>share matching</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _summary(
    questions: Sequence[QuestionAgreement], calibrated: dict[str, QuestionCalibration]
) -> str:
    rows = []
    for q in questions:
        c = calibrated.get(q.question)
        agreement = "n/a" if q.agreement is None else f"{q.agreement:.0%}"
        rows.append(
            f"<tr><td>{escape(q.label)}</td><td class='num'>{q.n}</td>"
            f"<td class='num'>{agreement}</td><td class='num'>{escape(kappa_text(q))}</td>"
            f"<td class='num'>{number_text(None if c is None else c.brier)}</td>"
            f"<td class='num'>{number_text(None if c is None else c.ece)}</td>"
            f"<td class='num'>{number_text(None if c is None else c.calibrated_ece)}</td></tr>"
        )
    return (
        '<table class="questions"><thead><tr><th>question</th><th>n</th><th>agreement</th>'
        "<th>kappa (95%)</th><th>Brier</th><th>ECE</th>"
        "<th>ECE of a calibrated judge (95th pct.)</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _question(found: QuestionCalibration) -> str:
    note = calibration_note(found)
    return (
        f'<section class="question" id="question-{escape(found.question)}">'
        f"<h2>{escape(found.label)}</h2>"
        f"<p>n = {found.n}: {escape(calibration_summary(found))}</p>"
        + (f'<p class="note">{escape(note)}</p>' if note else "")
        + f'<div class="plot">{reliability_svg(found)}{_bins_table(found)}</div></section>'
    )


def alignment_html(
    questions: Sequence[QuestionAgreement],
    calibration: Sequence[QuestionCalibration],
    *,
    suite: str,
    judge: str,
    labels: str,
    artifacts: int,
    usage: UsageSummary,
) -> str:
    """The ``canon align`` page: the per-question table (agreement, kappa, Brier, ECE), then
    each question's reliability diagram and bins, then what the judge's calls spent."""
    calibrated = {c.question: c for c in calibration}
    count = sum(q.n for q in questions)
    parts = [
        *page_start(f"Canon alignment: {suite}", _STYLE),
        f"<p>judge <code>{escape(judge)}</code>: {count} label(s) on {artifacts} artifact(s) "
        f"from <code>{escape(labels)}</code></p>",
        _summary(questions, calibrated),
        f"<p>kappa interval: 95% {escape(KAPPA_METHOD)}.<br>{escape(CALIBRATION_METHOD)}.</p>",
        '<p class="legend">Reliability diagrams: answers are put in bins by the judge\'s '
        "confidence in its most likely label. Each bar is the share of a bin's answers whose "
        "label matches the person's, the dark line across it their mean confidence, the "
        "shading the gap between the two (the ECE is the gaps' mean, weighted by the counts "
        "above the bars). On the dashed diagonal a judge is exactly as sure as it is right: "
        "a bar below it is a judge surer than it is right, above it one less sure than it "
        "could be.</p>",
        *(_question(c) for c in calibration),
        f"<p>{escape(usage.line())}</p>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"
