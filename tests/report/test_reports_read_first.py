"""Reports a person reads first: what failed comes first and says why, in few lines."""

from __future__ import annotations

import dataclasses
import html
import re

from canon.core.outcome import Note, NoteKind
from canon.core.scoring import Answer, judge_verdict, score_cell, unscored_cell
from canon.report.check import failing_cells, render_check
from canon.report.html import html_report


def _baseline_of(comparison):  # type: ignore[no-untyped-def]
    # render_check needs the baseline only for its remedy's "stale" test
    from canon.core.baseline import Baseline

    return Baseline(5, "cdt", "1", "f", "mock:test", None, 0.85, {})


def test_the_flips_table_links_to_the_artifact_and_gives_the_judges_reason(regressed):
    plan, results, comparison = regressed
    page = html_report(results, plan, suite="demo", comparison=comparison)
    flips = page[page.index('<table class="flips">') :].split("</table>")[0]
    assert "<th>judge&#x27;s reason</th>" in flips
    link = re.search(r'<td class="artifact"><a href="#(artifact-\d+)">fine</a></td>', flips)
    assert link is not None and '<section class="artifact' in page
    assert re.search(rf'<section class="[^"]*" id="{link.group(1)}" data-verdict', page)
    p2 = next(r for r in results if r.key == "fine").cell("P2")
    assert p2.rationale and f'<td class="judges-reason">{html.escape(p2.rationale)}' in flips


def test_rates_name_each_principle_beside_its_id(regressed):
    plan, results, comparison = regressed
    page = html_report(results, plan, suite="demo", comparison=comparison)
    p2 = results[0].cell("P2").question.subject
    assert p2 is not None and f"P2 satisfied ({p2[:40]}" in page
    text = render_check(comparison, _baseline_of(comparison), suite="s", path="b", results=results)
    assert f"  P2 ({p2[:40]}" in text


def test_repeated_notes_are_said_once_with_a_count(regressed):
    plan, results, comparison = regressed
    same = "judge not validated on this principle: P2"
    repeated = dataclasses.replace(
        comparison,
        notes=(*comparison.notes, *[Note(NoteKind.JUDGE_CHANGED, "x")] * 3),
        alignment=(same,) * 8,
    )
    text = render_check(repeated, _baseline_of(repeated), suite="s", path="b", results=results)
    assert text.count(same) == 1 and f"  - {same} (x8)" in text
    assert text.count("  - x") == 1 and "  - x (x3)" in text
    page = html_report(results, plan, suite="demo", comparison=repeated)
    assert page.count(same) == 1 and f"<li>{same} (x8)</li>" in page


def test_a_drift_test_that_did_not_run_is_not_called_no_regression(regressed):
    plan, results, comparison = regressed
    untested = dataclasses.replace(comparison.drift.test, method="none", detail="too few")
    drift = dataclasses.replace(comparison.drift, test=untested)
    comparison = dataclasses.replace(comparison, drift=drift)
    assert not drift.regressed
    page = html_report(results, plan, suite="demo", comparison=comparison)
    assert "<th>verdict</th><td>not tested" in page
    assert "no regression" not in page


def test_the_non_canon_block_keeps_the_principle_that_failed_it(plan, mixed):
    # Three unscored questions used to fill the three lines under a non-canon artifact and
    # push out the principle its reason names.
    weak = next(r for r in mixed if r.key == "weak")
    cells = list(weak.cells)
    questions = [c.question for c in cells]
    p2 = next(q for q in questions if q.id == "P2")
    violated = score_cell(p2, Answer({"no": 1.0}, rationale="it refunded 640 EUR itself"))
    down = [unscored_cell(q, "HTTP 500") for q in questions if q.kind == "facet"][:3]
    rest = [c for c in cells if c.id != "P2" and c.id not in {d.id for d in down}]
    result = judge_verdict("w", [*down, *rest, violated], 0.85)
    from canon.core.scoring import violation_reason

    result = dataclasses.replace(
        result, reasons=(violation_reason(violated, confirmed=True), *result.reasons)
    )
    shown = [c.id for c in failing_cells(result)]
    assert shown[0] == "P2" and not {d.id for d in down} & set(shown)


def test_a_check_of_one_flipped_artifact_is_short(regressed):
    _plan, results, comparison = regressed
    variants = tuple(f"re-ask {i}: wording {i % 3 + 1} of 3" for i in range(1, 9))
    flips = tuple(
        dataclasses.replace(f, confirmed_by=variants) if f.regression else f
        for f in comparison.flips
    )
    comparison = dataclasses.replace(comparison, flips=flips, alignment=("not validated",) * 8)
    text = render_check(comparison, _baseline_of(comparison), suite="s", path="b", results=results)
    (said,) = [line for line in text.splitlines() if "re-ask 1:" in line]
    assert said.startswith("    confirmed by 8 varied re-ask(s): re-ask 1: wording 2 of 3; ")
    assert text.count("not validated") == 1
    assert len(text.splitlines()) <= 32, text  # each re-ask and repeated line was its own line
