"""GitHub Actions output: workflow-command annotations and a step-summary table.

Each regression and each non-canon artifact becomes an ``::error`` annotation, which GitHub
lists on the run's summary page and on the pull request; the judge's reason goes with it. A
known failure (non-canon in the baseline too) is a ``::warning`` unless ``--strict``.
"""

from __future__ import annotations

from collections.abc import Sequence

from canon.core.artifact import Artifact
from canon.core.compare import Comparison, Flip
from canon.core.scoring import (
    ArtifactResult,
    Cell,
    cell_label,
    fails_on_evidence,
    reason_excerpt,
    shortfalls,
    shown_score,
)
from canon.core.verdict import Verdict, judge_failures, tally, verdict_counts, verdict_of
from canon.report.check import counted
from canon.report.text import input_line

TITLE = "Canon"
VERDICTS = {
    "conforms": "CONFORMS",
    "regressed": "REGRESSION",
    "inconclusive": "INCONCLUSIVE",
    "unavailable": "INCOMPLETE",
}


def escape_data(text: str) -> str:
    """A workflow command's message: %, CR and LF are the characters it cannot carry."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command property (title, file): ``:`` and ``,`` end it, so escape them too."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, title: str, message: str, *, file: str | None = None) -> str:
    """One workflow command line: ``::error title=...,file=...::message``."""
    properties = [f"title={escape_property(title)}"]
    if file is not None:
        properties.append(f"file={escape_property(file)}")
    return f"::{level} {','.join(properties)}::{escape_data(message)}"


def github_annotations(
    results: Sequence[ArtifactResult],
    comparison: Comparison | None = None,
    *,
    suite_file: str | None = None,
    artifacts: Sequence[Artifact] = (),
    inconclusive: Sequence[str] = (),
) -> str:
    """Annotation lines for a scored run (``canon score``) or a check (``canon check``); an
    artifact's annotation says the request it answers when ``artifacts`` give one.
    ``inconclusive``: why a scored run (no ``comparison``) could not tell."""
    lines: list[str] = []
    by_key = {r.key: r for r in results}
    given = {a.key: a for a in artifacts}

    def asked(key: str, message: str) -> str:
        line = input_line(given.get(key))
        return message if line is None else f"{message}\n{line}"

    known = comparison.tolerated if comparison is not None else frozenset()
    for result in results:
        if fails_on_evidence(result):
            tolerated = result.key in known  # a known failure warns; --strict makes it an error
            lines.append(
                annotation(
                    "warning" if tolerated else "error",
                    f"{TITLE} {'known failure' if tolerated else 'non-canon artifact'} "
                    f"{result.key}",
                    asked(result.key, _non_canon_message(result)),
                    file=suite_file,
                )
            )
    if comparison is None and inconclusive and not any(fails_on_evidence(r) for r in results):
        lines.append(
            annotation(
                "error",
                f"{TITLE} inconclusive",
                "this run cannot tell whether every artifact is canon (exit code 6): "
                + "; ".join(inconclusive),
            )
        )
    if comparison is not None:
        if comparison.inconclusive:
            lines.append(
                annotation(
                    "error",
                    f"{TITLE} inconclusive",
                    "this run cannot tell a regression from the judge's own mistakes "
                    "(exit code 6): " + "; ".join(comparison.inconclusive),
                )
            )
        suspected = "suspected " if comparison.inconclusive else ""
        for flip in comparison.flips:
            if flip.regression:
                lines.append(
                    annotation(
                        "warning" if suspected else "error",
                        f"{TITLE} {suspected}regression in {flip.key} {flip.question}",
                        asked(flip.key, _flip_message(flip, by_key.get(flip.key))),
                        file=suite_file,
                    )
                )
        drift = comparison.drift
        if drift.regressed and drift.baseline_mean is not None and drift.current_mean is not None:
            p_value = (
                "" if drift.test.p_value is None else f", one-sided p = {drift.test.p_value:.3g}"
            )
            lines.append(
                annotation(
                    "error",
                    f"{TITLE} mean score dropped",
                    f"mean {drift.baseline_mean:.3f} -> {drift.current_mean:.3f} (drop "
                    f"{drift.drop or 0.0:.3f}, tolerance {drift.tolerance:.3f}{p_value})",
                )
            )
        lines.extend(
            annotation("notice", f"{TITLE} note", note) for note in counted(comparison.notes)
        )
        lines.extend(
            annotation("notice", f"{TITLE} judge alignment", line)
            for line in counted(comparison.alignment)
        )
    unscored = sum(len(r.unscored) for r in results)
    if unscored:
        incomplete = [r.key for r in results if verdict_of(r) is Verdict.INCOMPLETE]
        failures = "; ".join(f"{error} (x{count})" for error, count in judge_failures(results))
        lines.append(
            annotation(
                "warning",
                f"{TITLE} judge unavailable",
                f"{len(incomplete)} artifact(s) incomplete (not judged)"
                + (f": {', '.join(incomplete)}" if incomplete else "")
                + f"; {unscored} question(s) unscored; judge failed: {failures}; "
                "exit code 3 means the run may be retried",
            )
        )
    return "".join(f"{line}\n" for line in lines)


def _non_canon_message(result: ArtifactResult) -> str:
    lines: list[str] = list(result.reasons)
    for cell in shortfalls(result):
        if cell.state != "unscored":  # unscored ones are already counted in the reasons
            reason = reason_excerpt(cell)
            line = f"{cell.id} {shown_score(cell)}: {cell_label(cell)}"
            lines.append(line if reason is None else f"{line} - judge: {reason}")
    return "\n".join(lines)


def _flip_message(flip: Flip, result: ArtifactResult | None) -> str:
    text = (
        f"{flip.question} ({flip.text}) flipped from satisfied to violated: "
        f"{flip.baseline_score:.2f} -> {flip.score:.2f} ({flip.status})"
    )
    if flip.confirmed_by:
        text += "\nconfirmed by: " + "; ".join(flip.confirmed_by)
    cell = _cell(result, flip.question)
    reason = None if cell is None else reason_excerpt(cell)
    return text if reason is None else f"{text}\njudge: {reason}"


def github_summary(
    results: Sequence[ArtifactResult],
    comparison: Comparison | None = None,
    *,
    suite: str,
    inconclusive: Sequence[str] = (),
) -> str:
    """A Markdown block for ``$GITHUB_STEP_SUMMARY``: verdict, regressions, non-canon.
    ``inconclusive``: why a scored run (no ``comparison``) could not tell."""
    failing = [r for r in results if fails_on_evidence(r)]
    if comparison is not None:
        verdict = VERDICTS[comparison.status]
    else:
        incomplete = verdict_counts(results)[Verdict.INCOMPLETE]
        verdict = (
            "NON-CANON"
            if failing
            else "INCOMPLETE"
            if incomplete
            else "INCONCLUSIVE"
            if inconclusive
            else "ALL CANON"
        )
    lines = [f"### Canon: suite `{suite}`: {verdict}", ""]
    if comparison is not None and comparison.inconclusive:
        why = "; ".join(comparison.inconclusive)
        lines += [
            f"This run cannot tell a regression from the judge's own mistakes: {_md(why)}.",
            "",
        ]
    elif comparison is None and inconclusive:
        why = "; ".join(inconclusive)
        lines += [f"This run cannot tell whether every artifact is canon: {_md(why)}.", ""]
    lines.append(f"{len(results)} artifact(s): {tally(results)}.")
    lines.extend(
        f"The judge failed on {count} question(s): {_md(error)}"
        for error, count in judge_failures(results)
    )
    flips = [f for f in comparison.flips if f.regression] if comparison is not None else []
    by_key = {r.key: r for r in results}
    if flips:
        lines += [
            "",
            "| artifact | question | baseline -> now | judge's reason |",
            "|---|---|---|---|",
        ]
        for flip in flips:
            cell = _cell(by_key.get(flip.key), flip.question)
            reason = (None if cell is None else reason_excerpt(cell)) or ""
            lines.append(
                f"| {_md(flip.key)} | {_md(flip.question)}: {_md(flip.text)} | "
                f"{flip.baseline_score:.2f} -> {flip.score:.2f} | {_md(reason)} |"
            )
    if failing:
        lines += ["", "| non-canon artifact | why |", "|---|---|"]
        lines.extend(f"| {_md(r.key)} | {_md('; '.join(r.reasons))} |" for r in failing)
    if comparison is not None and comparison.alignment:
        lines += ["", "The judge on the questions that failed (agreement with human labels):", ""]
        lines.extend(f"- {_md(line)}" for line in counted(comparison.alignment))
    return "\n".join(lines) + "\n\n"


def _cell(result: ArtifactResult | None, question: str) -> Cell | None:
    if result is None:
        return None
    return next((c for c in result.cells if c.id == question), None)


def _md(text: str) -> str:
    # a table cell: one line, and a pipe would end the cell early
    return " ".join(text.split()).replace("|", "\\|")
