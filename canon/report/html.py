"""A self-contained HTML page of a run: inline CSS, no scripts, nothing fetched."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence

from canon.check.runner import ScoringPlan
from canon.check.spend import run_usage
from canon.core.artifact import Artifact, input_text
from canon.core.compare import Comparison, Drift, Flip
from canon.core.scoring import ArtifactResult, Cell, cell_label, cell_reason, falls_short
from canon.core.usage import format_cost
from canon.core.verdict import Verdict, judge_failures
from canon.core.verdict import verdict_of as core_verdict
from canon.report.check import counted, drift_verdict, incomplete_lines, question_subjects
from canon.report.junit import xml_safe
from canon.report.text import shorten

_STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 70rem;
       padding: 0 1rem; color: #1d1d1f; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.15rem; margin: 0; }
table { border-collapse: collapse; margin: .5rem 0 1rem; }
th, td { border: 1px solid #d0d0d5; padding: .25rem .5rem; text-align: left;
         vertical-align: top; }
th { background: #f2f2f5; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
section { border: 1px solid #d0d0d5; border-left-width: 6px; border-radius: 4px;
          margin: 1rem 0; padding: .75rem 1rem; }
.canon { border-left-color: #2e7d32; } .non-canon { border-left-color: #c62828; }
.incomplete { border-left-color: #ef6c00; } .comparison { border-left-color: #455a64; }
.verdict { font-weight: 700; } .non-canon .verdict { color: #c62828; }
.canon .verdict { color: #2e7d32; } .incomplete .verdict { color: #ef6c00; }
section.artifact.regressed { border-left-color: #c62828; }
section.artifact.regressed .verdict { color: #c62828; }
ul.regressions, .regressed-mark { color: #c62828; font-weight: 700; }
.banner { font-weight: 700; padding: .5rem .75rem; border-radius: 4px; color: #fff; }
.banner.good { background: #2e7d32; } .banner.bad { background: #c62828; }
.banner.unsure { background: #ef6c00; }
tr.short td.score, tr.short td.state { color: #c62828; font-weight: 700; }
tr.flips-row.regression td { color: #c62828; font-weight: 700; }
td.reason { white-space: pre-wrap; max-width: 32rem; }
details.passing > summary { cursor: pointer; font-weight: 700; color: #2e7d32; margin: 1rem 0; }
td.judges-reason { white-space: pre-wrap; max-width: 24rem; }
table.rates td.baseline, table.rates td.now { white-space: nowrap; }
details.text { margin: .5rem 0; } details.text summary { cursor: pointer; color: #455a64; }
pre.artifact-text, pre.artifact-input, pre.artifact-context { white-space: pre-wrap;
  background: #f7f7f9; padding: .5rem .75rem; border-radius: 4px; margin: .25rem 0 0; }
code, .mono { font-family: ui-monospace, monospace; word-break: break-all; }
"""
# banner text -> its colour class; every verdict is coloured the same way everywhere
_BANNER_TONE = {
    "CONFORMS": "good",
    "ALL CANON": "good",
    "REGRESSION": "bad",
    "NON-CANON": "bad",
    "INCOMPLETE": "unsure",
    "INCONCLUSIVE": "unsure",
}
# Defence in depth: everything is escaped, and the page also forbids scripts and fetches.
_POLICY = "default-src 'none'; style-src 'unsafe-inline'"


def html_report(
    results: Sequence[ArtifactResult],
    plan: ScoringPlan,
    *,
    suite: str,
    comparison: Comparison | None = None,
    elapsed: float | None = None,
    texts: Mapping[str, str] | None = None,
    artifacts: Mapping[str, Artifact] | None = None,
    inconclusive: Sequence[str] = (),
) -> str:
    """One self-contained HTML page: summary, the check's comparison, then each artifact
    (with its text, from ``texts`` by key, folded away until opened, and the input it
    answers and its context, from ``artifacts`` by key)."""
    parts = [
        *page_start(f"Canon report: {suite}"),
        _summary(results, plan, comparison, elapsed, inconclusive),
    ]
    if comparison is None and inconclusive:
        parts.append(
            '<section class="comparison" id="inconclusive-run">'
            "<h3>Inconclusive: this run cannot tell whether every artifact is canon</h3>"
            + _list("inconclusive", inconclusive)
            + "</section>"
        )
    anchors = {r.key: f"artifact-{index}" for index, r in enumerate(results, 1)}
    if comparison is not None:
        parts.append(_comparison(comparison, results, anchors))
    flips = comparison.flips if comparison is not None else ()
    # What needs a person's eyes first: failing and incomplete artifacts, in suite order;
    # the canon ones follow, folded away.
    cards: dict[bool, list[str]] = {True: [], False: []}
    for result in results:
        regressions = [f for f in flips if f.key == result.key and f.regression]
        text = None if texts is None else texts.get(result.key)
        passing = core_verdict(result) is Verdict.CANON and not regressions
        given = None if artifacts is None else artifacts.get(result.key)
        card = _artifact(anchors[result.key], result, regressions, text, given)
        cards[passing].append(card)
    parts.extend(cards[False])
    if cards[True]:
        parts.append(
            f'<details class="passing" id="passing"{"" if cards[False] else " open"}>'
            f"<summary>{len(cards[True])} canon artifact(s)</summary>"
        )
        parts.extend(cards[True])
        parts.append("</details>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def page_start(title: str, style: str = "") -> list[str]:
    """The opening of every Canon page: the doctype, the policy forbidding scripts and
    fetches, the shared style (plus ``style``) and the title as its heading; the page ends
    with ``</body></html>``."""
    return [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">',
        f"<title>{_e(title)}</title><style>{_STYLE}{style}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
    ]


def escape(text: str) -> str:
    """Text as HTML (attribute-safe), stripped of characters no markup language can carry."""
    return _e(text)


def verdict_of(result: ArtifactResult) -> str:
    """canon, non-canon, or incomplete (canon.core.verdict), as the page's classes say it."""
    return core_verdict(result).words


def _summary(
    results: Sequence[ArtifactResult],
    plan: ScoringPlan,
    comparison: Comparison | None,
    elapsed: float | None,
    inconclusive: Sequence[str] = (),
) -> str:
    verdicts = [verdict_of(r) for r in results]
    counts = {v: verdicts.count(v) for v in ("canon", "non-canon", "incomplete")}
    if comparison is not None:
        banner = {
            "conforms": "CONFORMS",
            "regressed": "REGRESSION",
            "inconclusive": "INCONCLUSIVE",
            "unavailable": "INCOMPLETE",
        }[comparison.status]
    elif counts["non-canon"]:
        banner = "NON-CANON"
    else:
        banner = (
            "INCOMPLETE"
            if counts["incomplete"]
            else "INCONCLUSIVE"
            if inconclusive
            else "ALL CANON"
        )
    rows = [
        ("artifacts", str(len(results))),
        ("canon", str(counts["canon"])),
        ("non-canon", str(counts["non-canon"])),
        ("incomplete", str(counts["incomplete"])),
        ("unscored questions", str(sum(len(r.unscored) for r in results))),
        ("questions the judge refused", str(sum(len(r.refused) for r in results))),
        *(
            ("judge failed", f"{error} (on {count} question(s))")
            for error, count in judge_failures(results)
        ),
        ("rubric", f"{plan.rubric.id} {plan.rubric.version} ({plan.rubric.fingerprint})"),
        ("judge", plan.judge.name),
        ("constitution digest", plan.constitution.digest),
        ("threshold", f"{plan.threshold:.3f}"),
    ]
    if comparison is not None:
        rows.append(("tolerance", f"{comparison.drift.tolerance:.3f}"))
    if elapsed is not None:
        rows.append(("time", f"{elapsed:.2f} s"))
    rows.extend(_usage_rows(results))
    body = "".join(
        f'<tr><th>{_e(k)}</th><td id="summary-{_slug(k)}">{_e(v)}</td></tr>' for k, v in rows
    )
    tone = _BANNER_TONE[banner]
    return f'<p class="banner {tone}" id="banner">{banner}</p><table id="summary">{body}</table>'


def _usage_rows(results: Sequence[ArtifactResult]) -> list[tuple[str, str]]:
    """Judge calls, tokens and cost for the run and per question kind."""
    summary = run_usage(results)
    rows = []
    for label, usage in [("judge usage", summary.run), *sorted(summary.by_kind.items())]:
        name = label if label == "judge usage" else f"judge usage ({label} questions)"
        cached = f", {usage.cached_tokens} cached" if usage.cached_tokens else ""
        batch = f", {usage.batch_calls} at the batch price" if usage.batch_calls else ""
        rows.append(
            (
                name,
                f"{usage.calls} call(s){batch}; {usage.prompt_tokens} prompt{cached} + "
                f"{usage.completion_tokens} completion tokens; cost {format_cost(usage.cost)}",
            )
        )
    rows.append(("answers without a call", str(summary.reused)))
    return rows


def _comparison(
    comparison: Comparison, results: Sequence[ArtifactResult], anchors: Mapping[str, str]
) -> str:
    c = comparison
    by_key = {r.key: r for r in results}
    parts = [
        '<section class="comparison" id="comparison"><h2>Compared with the baseline</h2>',
        f"<p>{c.checked} checked, {c.matched} matched, {len(c.new)} new, "
        f"{len(c.missing)} recorded but missing</p>",
    ]
    incomplete = incomplete_lines(c)
    if incomplete:
        parts.append(_list("incomplete", (line.strip() for line in incomplete)))
    if c.flips:
        rows = [
            (
                f.key,
                f.label,
                f.text,
                f"{f.baseline_score:.2f} ({f.baseline_confidence:.2f})",
                f"{f.score:.2f} ({f.confidence:.2f})",
                f.status + (" - regression" if f.regression else ""),
                _flip_reason(by_key.get(f.key), f.question),
            )
            for f in c.flips
        ]
        heads = (
            "artifact",
            "question",
            "subject",
            "baseline (conf.)",
            "now (conf.)",
            "status",
            "judge's reason",
        )
        marks = ["regression" if f.regression else "" for f in c.flips]
        links = [anchors.get(f.key) for f in c.flips]
        parts.append(
            "<h3>Per-question flips (Layer 1)</h3>" + _table("flips", heads, rows, marks, links)
        )
    parts.append(_drift(c.drift, inconclusive=bool(c.inconclusive)))
    then, now = c.canon_rate
    subjects = question_subjects(results)
    rate_rows = [("canon artifacts", str(then), str(now))] + [
        (
            f"{qid} satisfied" + (f" ({shorten(subjects[qid], 80)})" if qid in subjects else ""),
            str(before),
            str(current),
        )
        for qid, (before, current) in c.question_rates.items()
    ]
    parts.append(
        "<h3>Rates (95% Wilson intervals)</h3>"
        + _table("rates", ("share", "baseline", "now"), rate_rows)
    )
    if c.known:
        parts.append(
            "<h3>Known failures (non-canon in the baseline too)</h3>"
            + _list("known", [f"{n.key}: {'; '.join(n.reasons)}" for n in c.known])
        )
    if c.noise is not None and c.noise.reasks:
        parts.append(
            f'<p id="noise">Judge noise on re-asks: {_e(str(c.noise.rate))} disagreed with '
            f"their question's majority answer (assumed at most "
            f"{c.noise.assumed_flip_rate:.0%}).</p>"
        )
    if c.inconclusive:
        parts.append(
            "<h3>Inconclusive: this run cannot tell a regression from the judge's own mistakes</h3>"
            + _list("inconclusive", c.inconclusive)
        )
    if c.alignment:
        parts.append(
            "<h3>The judge on the questions that failed (agreement with human labels)</h3>"
            + _list("alignment", counted(c.alignment))
        )
    if c.notes:
        parts.append("<h3>Notes</h3>" + _list("notes", counted(c.notes)))
    parts.append("</section>")
    return "\n".join(parts)


def _drift(drift: Drift, *, inconclusive: bool = False) -> str:
    def number(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    test = drift.test
    rows = [
        ("baseline mean", number(drift.baseline_mean)),
        ("current mean", number(drift.current_mean)),
        ("drop", number(drift.drop)),
        ("tolerance", number(drift.tolerance)),
        ("test", f"{test.method}: {test.detail}"),
        ("one-sided p", "-" if test.p_value is None else f"{test.p_value:.3g}"),
        (
            "95% interval for the drop",
            "-" if test.interval is None else f"[{test.interval[0]:.3f}, {test.interval[1]:.3f}]",
        ),
        ("drop caught with 80% power", number(test.minimum_detectable)),
        ("underpowered", "yes" if drift.underpowered else "no"),
        ("smallest flaggable drop", number(drift.smallest_flaggable)),
        ("verdict", drift_verdict(drift, inconclusive=inconclusive)),
    ]
    body = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
    return f'<h3>Mean drift (Layer 2)</h3><table id="drift">{body}</table>'


def _flip_reason(result: ArtifactResult | None, question: str) -> str:
    """The judge's reason for a flipped question, in full ("" when it gave none)."""
    try:
        return "" if result is None else (cell_reason(result.cell(question)) or "")
    except KeyError:
        return ""


def _artifact(
    anchor: str,
    result: ArtifactResult,
    regressions: Sequence[Flip],
    text: str | None,
    artifact: Artifact | None = None,
) -> str:
    verdict = verdict_of(result)
    score = "-" if result.score is None else f"{result.score:.3f}"
    # A confirmed flip fails the check even when the artifact still scores as canon, so the
    # card says REGRESSED in red and keeps the scoring verdict as a plain fact beside it.
    shown = "REGRESSED" if regressions else verdict.upper()
    scored = f' <span class="scored">(scored {verdict})</span>' if regressions else ""
    classes = f"artifact {verdict}" + (" regressed" if regressions else "")
    parts = [
        f'<section class="{classes}" id="{anchor}" data-verdict="{verdict}">',
        f'<h2 class="key mono">{_e(result.key)}</h2>',
        f'<p><span class="verdict">{shown}</span>{scored}'
        + f' score <span class="score">{score}</span> (threshold {result.threshold:.3f})'
        + (", NSCP gate tripped" if result.gated else "")
        + "</p>",
    ]
    if artifact is not None and artifact.input is not None:
        parts.append(
            '<details class="text"><summary>input (the request it answers)</summary>'
            f'<pre class="artifact-input">{_e(input_text(artifact.input))}</pre></details>'
        )
    if artifact is not None and artifact.context:
        context = "\n\n".join(f"[{n}] {item}" for n, item in enumerate(artifact.context, 1))
        parts.append(
            '<details class="text"><summary>context (what the agent had)</summary>'
            f'<pre class="artifact-context">{_e(context)}</pre></details>'
        )
    if text is not None:
        parts.append(
            '<details class="text"><summary>artifact text</summary>'
            f'<pre class="artifact-text">{_e(text)}</pre></details>'
        )
    if regressions:
        flipped = (
            f"{f.label} flipped from satisfied to violated ({f.status})" for f in regressions
        )
        parts.append(_list("regressions", flipped))
    if result.reasons:
        parts.append(_list("reasons", result.reasons))
    failures = judge_failures([result])
    if failures:  # said once here, not in every unscored row of the table below
        parts.append(
            _list(
                "judge-failures",
                (f"judge failed on {count} question(s): {error}" for error, count in failures),
            )
        )
    if result.notes:
        parts.append(_list("notes", counted(result.notes)))
    if result.gates:
        gates = [(g.gate, g.status, "; ".join(g.reasons)) for g in result.gates]
        parts.append(_table("gates", ("gate", "outcome", "reasons"), gates))
    if result.cells:
        heads = ("id", "subject", "state", "score", "confidence", "reason")
        marks = ["short" if falls_short(c) else "" for c in result.cells]
        rows = [_cell_row(c) for c in result.cells]
        parts.append(_table("questions", heads, rows, marks))
    parts.append("</section>")
    return "\n".join(parts)


def _cell_row(cell: Cell) -> tuple[str, ...]:
    def number(value: float | None) -> str:
        return "" if value is None else f"{value:.2f}"

    # the judge's own words in full, and for a refused cell the judge's refusal; why the
    # judge could not answer an unscored cell is said once above the table
    reason = cell.error if cell.state == "refused" else cell_reason(cell)
    return (
        cell.id,
        cell_label(cell),
        "judge refused" if cell.state == "refused" else cell.state,
        number(cell.score),
        number(cell.confidence),
        reason or "",
    )


def _table(
    kind: str,
    heads: Sequence[str],
    rows: Iterable[Sequence[str]],
    marks: Sequence[str] = (),
    links: Sequence[str | None] = (),
) -> str:
    """A table; ``links`` (one per row, or None) make each row's first cell a link to
    that anchor on the page."""
    rows = list(rows)
    marks = list(marks) or [""] * len(rows)
    targets = list(links) or [None] * len(rows)

    def cell(head: str, value: str, target: str | None) -> str:
        shown = _e(value) if target is None else f'<a href="#{_e(target)}">{_e(value)}</a>'
        return f'<td class="{_slug(head)}">{shown}</td>'

    head = "".join(f"<th>{_e(h)}</th>" for h in heads)
    body = "".join(
        f'<tr class="{kind}-row{" " + mark if mark else ""}">'
        + "".join(
            cell(h, v, target if i == 0 else None)
            for i, (h, v) in enumerate(zip(heads, row, strict=True))
        )
        + "</tr>"
        for row, mark, target in zip(rows, marks, targets, strict=True)
    )
    return f'<table class="{kind}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _list(kind: str, items: Iterable[str]) -> str:
    return f'<ul class="{kind}">' + "".join(f"<li>{_e(i)}</li>" for i in items) + "</ul>"


def _slug(text: str) -> str:
    return "-".join(
        text.replace("(", "").replace("'", "").replace(")", "").replace(".", "").split()
    )


def _e(text: str) -> str:
    # Escaped for HTML, and stripped of characters no markup language can carry.
    return html.escape(xml_safe(text), quote=True)
