"""JUnit XML for CI dashboards: one testcase per artifact, plus mean drift for a check."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from canon.check.runner import ScoringPlan
from canon.check.spend import run_usage
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
from canon.core.verdict import judge_failures
from canon.report.check import ALIGNMENT_HEADING, counted
from canon.report.text import input_line

# Everything XML 1.0 has no way to express, even as a character reference: C0 controls
# other than tab, newline and carriage return, lone surrogates, and U+FFFE/U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(text: str) -> str:
    """``text`` with characters XML 1.0 forbids shown as visible ``\\xNN`` escapes."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def junit_xml(
    results: Sequence[ArtifactResult],
    plan: ScoringPlan,
    *,
    suite: str,
    comparison: Comparison | None = None,
    elapsed: float | None = None,
    artifacts: Sequence[Artifact] = (),
    inconclusive: Sequence[str] = (),
) -> str:
    """A JUnit XML document for a scored run, and for ``canon check`` its comparison; each
    artifact's case says the request it answers when ``artifacts`` give one.
    ``inconclusive``: why a scored run (no ``comparison``) could not tell."""
    root = ET.Element("testsuites")
    testsuite = ET.SubElement(root, "testsuite", name="canon")
    _properties(testsuite, plan, comparison)
    _usage_properties(testsuite, results)
    classname = f"canon.{suite}"
    flips = _flips_by_key(comparison)
    known = comparison.tolerated if comparison is not None else frozenset()
    kind = "inconclusive" if comparison is not None and comparison.inconclusive else None
    given = {a.key: a for a in artifacts}
    for result in results:
        _artifact_case(
            testsuite,
            classname,
            result,
            flips.get(result.key, ()),
            result.key in known,
            kind,
            input_line(given.get(result.key)),
        )
    if comparison is None and inconclusive:
        # A scored run that could not tell is no pass: one error case says why.
        case = _case(testsuite, f"{classname}.score", "judge-noise")
        message = "inconclusive: this run cannot tell whether every artifact is canon"
        _child(case, "error", message, "inconclusive", "\n".join(inconclusive))
    if comparison is not None:
        if comparison.inconclusive:
            # One check-level error says why no failure below is a confident regression.
            case = _case(testsuite, f"{classname}.check", "judge-noise")
            message = (
                "inconclusive: this run cannot tell a regression from the judge's own mistakes"
            )
            _child(case, "error", message, "inconclusive", "\n".join(comparison.inconclusive))
        for key in comparison.missing:
            case = _case(testsuite, classname, key)
            _child(case, "skipped", "recorded in the baseline but not in this run")
        _drift_case(testsuite, classname, comparison)
        out = counted(comparison.notes)
        if comparison.alignment:
            out.append(f"{ALIGNMENT_HEADING}:")
            out.extend(f"  - {line}" for line in counted(comparison.alignment))
        if out:
            _text(testsuite, "system-out", "\n".join(out))
    cases = testsuite.findall("testcase")
    failures = sum(case.find("failure") is not None for case in cases)
    errors = sum(case.find("failure") is None and case.find("error") is not None for case in cases)
    skipped = sum(case.find("skipped") is not None for case in cases)
    counts = {
        "tests": len(cases),
        "failures": failures,
        "errors": errors,
        "skipped": skipped,
        "time": f"{elapsed:.3f}" if elapsed is not None else "0",
    }
    for name, value in counts.items():
        testsuite.set(name, str(value))
        root.set(name, str(value))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _usage_properties(testsuite: ET.Element, results: Sequence[ArtifactResult]) -> None:
    """Tokens and cost, run-wide and per question kind ("unknown" when unpriceable)."""
    properties = testsuite.find("properties")
    if properties is None:
        properties = ET.SubElement(testsuite, "properties")
    for name, value in run_usage(results).properties().items():
        ET.SubElement(properties, "property", name=name, value=xml_safe(value))


def _properties(testsuite: ET.Element, plan: ScoringPlan, comparison: Comparison | None) -> None:
    values = {
        "rubric.id": plan.rubric.id,
        "rubric.version": plan.rubric.version,
        "rubric.fingerprint": plan.rubric.fingerprint,
        "judge": plan.judge.name,
        "constitution": plan.constitution.digest,
        "threshold": f"{plan.threshold:g}",
    }
    if comparison is not None:
        values["tolerance"] = f"{comparison.drift.tolerance:g}"
        values["status"] = comparison.status
        values.update(rate_properties(comparison))
        if comparison.inconclusive:
            values["inconclusive"] = "; ".join(comparison.inconclusive)
    properties = ET.SubElement(testsuite, "properties")
    for name, value in values.items():
        ET.SubElement(properties, "property", name=name, value=xml_safe(value))


def rate_properties(comparison: Comparison) -> dict[str, str]:
    """Shares with their 95 % Wilson intervals, baseline and now, as property values."""
    values: dict[str, str] = {}
    then, now = comparison.canon_rate
    values["canon_rate.baseline"] = str(then)
    values["canon_rate.now"] = str(now)
    for qid, (before, current) in comparison.question_rates.items():
        values[f"satisfied.{qid}.baseline"] = str(before)
        values[f"satisfied.{qid}.now"] = str(current)
    drift = comparison.drift
    if drift.test.interval is not None:
        low, high = drift.test.interval
        values["drift.drop_interval_95"] = f"[{low:.4f}, {high:.4f}]"
    if drift.test.minimum_detectable is not None:
        values["drift.minimum_detectable_drop_80"] = f"{drift.test.minimum_detectable:.4f}"
        values["drift.underpowered"] = str(drift.underpowered).lower()
    if comparison.noise is not None and comparison.noise.reasks:
        values["judge_noise.reasks"] = str(comparison.noise.rate)
    return values


def _flips_by_key(comparison: Comparison | None) -> dict[str, tuple[Flip, ...]]:
    grouped: dict[str, list[Flip]] = {}
    for flip in comparison.flips if comparison is not None else ():
        grouped.setdefault(flip.key, []).append(flip)
    return {key: tuple(flips) for key, flips in grouped.items()}


def _artifact_case(
    testsuite: ET.Element,
    classname: str,
    result: ArtifactResult,
    flips: Sequence[Flip],
    known: bool = False,
    kind: str | None = None,
    asked: str | None = None,
) -> None:
    # ``kind`` "inconclusive" marks failures the judge's noise cannot separate from a change;
    # ``asked`` is the input line of the request the artifact answers, shown first.
    case = _case(testsuite, classname, result.key)
    head = [] if asked is None else [asked]
    tolerated = known and fails_on_evidence(result)
    if fails_on_evidence(result) and not known:
        _child(
            case,
            "failure",
            f"non-canon: {result.reasons[0] if result.reasons else result.key}",
            kind or ("judge-refused" if result.refused else "non-canon"),
            "\n".join([*head, *result.reasons, *_shortfall_lines(result)]),
        )
    for flip in flips:
        if flip.regression:
            body = _flip_body(flip, _cell_or_none(result, flip.question))
            message = _flip_message(flip)
            if kind is not None:
                message = f"suspected {message} - inconclusive, the judge is too noisy"
            _child(case, "failure", message, kind or "regression", body)
    unscored = result.unscored
    unavailable = [f for f in flips if f.status == "unavailable"]
    lines = [
        f"{', '.join(c.id for c in unscored if c.error == error)}: {error}"
        for error, _ in judge_failures([result])
    ]
    lines.extend(f"{f.question}: re-asking the judge about a flip failed" for f in unavailable)
    failed = case.find("failure") is not None
    if tolerated and not failed:
        # a known failure is reported, not failed: CI stays green unless --strict asks
        _child(case, "skipped", "known failure: non-canon in the baseline too (--strict fails it)")
        lines = [*head, *result.reasons, *_shortfall_lines(result), *lines]
        _text(case, "system-out", "\n".join(lines))
        return
    if (unscored or unavailable) and not failed:
        message = (
            f"incomplete (not judged): the judge left {len(unscored)} question(s) unscored"
            if unscored
            else f"incomplete: re-asking the judge failed on {len(unavailable)} flip(s)"
        )
        _child(case, "error", message, "judge-unavailable", "\n".join(lines))
    out = list(head)
    if result.score is not None:
        out.append(f"score {result.score:.3f}, threshold {result.threshold:.3f}")
    out.extend(result.notes)
    out.extend(
        f"{f.question} flipped once but the judge did not repeat it on re-ask"
        for f in flips
        if f.status == "unconfirmed"
    )
    if failed:  # the failure decides the outcome; what the judge left out is still shown
        out.extend(f"unscored {line}" for line in lines)
    if out:
        _text(case, "system-out", "\n".join(out))


def _flip_message(flip: Flip) -> str:
    return f"regression: {flip.label} flipped from satisfied to violated ({flip.status})"


def _flip_body(flip: Flip, cell: Cell | None) -> str:
    body = (
        f"{flip.question}: {flip.text}\n"
        f"baseline {flip.baseline_score:.2f} (confidence {flip.baseline_confidence:.2f}) -> "
        f"now {flip.score:.2f} (confidence {flip.confidence:.2f}), {flip.status}"
    )
    if flip.confirmed_by:
        body += "\nconfirmed by: " + "; ".join(flip.confirmed_by)
    reason = None if cell is None else reason_excerpt(cell)
    return body if reason is None else f"{body}\njudge: {reason}"


def _shortfall_lines(result: ArtifactResult) -> list[str]:
    """One line per question that fell short, with the judge's reason where it gave one."""
    lines = []
    for cell in shortfalls(result):
        if cell.state == "unscored":
            continue  # said once per distinct failure, with the questions it hit
        shown = shown_score(cell)
        reason = reason_excerpt(cell)
        line = f"{cell.id} {shown}: {cell_label(cell)}"
        lines.append(line if reason is None else f"{line}\n  judge: {reason}")
    return lines


def _cell_or_none(result: ArtifactResult, question: str) -> Cell | None:
    try:
        return result.cell(question)
    except KeyError:
        return None


def _drift_case(testsuite: ET.Element, classname: str, comparison: Comparison) -> None:
    drift = comparison.drift
    # its own classname, so an artifact keyed "mean-drift" cannot be mistaken for it
    case = _case(testsuite, f"{classname}.check", "mean-drift")
    if drift.baseline_mean is None or drift.current_mean is None or drift.drop is None:
        _child(case, "skipped", "mean drift not tested: nothing to compare")
        return
    numbers = (
        f"baseline mean {drift.baseline_mean:.3f}, current mean {drift.current_mean:.3f}, "
        f"drop {drift.drop:.3f}, tolerance {drift.tolerance:.3f}"
    )
    test = drift.test
    detail = [numbers, f"test: {test.method} ({test.detail})"]
    if test.p_value is not None:
        detail.append(f"one-sided p = {test.p_value:.3g}")
    if drift.smallest_flaggable is not None:
        detail.append(f"smallest drop this check could flag: {drift.smallest_flaggable:.3f}")
    if drift.regressed:
        _child(
            case,
            "failure",
            f"mean dropped by {drift.drop:.3f}, beyond the tolerance and beyond noise",
            "inconclusive" if comparison.inconclusive else "regression",
            "\n".join(detail),
        )
    elif test.method == "none":
        _child(case, "skipped", f"mean drift not tested: {test.detail}")
    else:
        _text(case, "system-out", "\n".join(detail))


def _case(testsuite: ET.Element, classname: str, name: str) -> ET.Element:
    return ET.SubElement(
        testsuite, "testcase", classname=xml_safe(classname), name=xml_safe(name), time="0"
    )


def _child(
    case: ET.Element, tag: str, message: str, kind: str | None = None, body: str = ""
) -> None:
    element = ET.SubElement(case, tag, message=xml_safe(message))
    if kind is not None:
        element.set("type", kind)
    if body:
        element.text = xml_safe(body)


def _text(parent: ET.Element, tag: str, text: str) -> None:
    ET.SubElement(parent, tag).text = xml_safe(text)
