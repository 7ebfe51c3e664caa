"""The judge's reason for every question that fell short, in every report format."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from canon.core.gate_outcome import GateOutcome
from canon.core.scoring import (
    Answer,
    failure_message,
    falls_short,
    judge_verdict,
    reason_excerpt,
    score_cell,
    shortfalls,
    unscored_cell,
)
from canon.report.html import html_report
from canon.report.json_report import results_document
from canon.report.junit import junit_xml, xml_safe
from canon.report.text import render_results


def _by_key(results, key):
    return next(r for r in results if r.key == key)


def test_shortfalls_are_the_unscored_and_below_full_marks_cells_worst_first(mixed):
    weak = _by_key(mixed, "weak")
    short = shortfalls(weak)
    assert short and all(c.score is not None and c.score < 1.0 for c in short)
    assert [c.score for c in short] == sorted(c.score for c in short)
    assert {c.id for c in weak.cells} - {c.id for c in short} == {"tradeoff", "G"}  # n/a, 1.0
    down = shortfalls(_by_key(mixed, "judge-down"))
    assert [(c.id, c.state) for c in down] == [("mission", "unscored")]
    assert shortfalls(_by_key(mixed, "fine")) == ()


def test_the_text_report_gives_every_shortfall_its_reason_on_one_line(mixed):
    text = render_results(mixed)
    weak = text[text.index("NON-CANON 0.111  weak") :].split("\nNON-CANON")[0]
    for cell in shortfalls(_by_key(mixed, "weak")):
        shown = f"{cell.id} [{cell.question.principle}]" if cell.question.principle else cell.id
        assert f"    {shown} 0.00: " in weak
        excerpt = reason_excerpt(cell)
        assert excerpt is not None and f"        judge: {excerpt}" in weak
        assert len(excerpt) <= 160 and "\n" not in excerpt and excerpt.endswith("…")
    # a principle is shown by its own text, not cut off just before it
    assert (
        "    P2 [escalate-large-refunds] 0.00: Hand any refund above 200 EUR to a human agent "
        "instead of deciding it." in weak
    )
    # the unscored cell's failure, said once for the run
    assert "\njudge failed on 1 question(s): rate limited after 3 retries" in text
    fine = text[text.index("fine") :].split("\n")[1]
    assert fine.startswith("NON-CANON")  # nothing listed under the canon artifact


def test_json_carries_every_reason_in_full(mixed, plan):
    document = results_document(mixed, plan)
    for record, result in zip(document["artifacts"], mixed, strict=True):
        for cell in result.cells:
            assert record["questions"][cell.id].get("reason") == cell.rationale
    weak = next(a for a in document["artifacts"] if a["key"] == "weak")
    assert "\n" in weak["questions"]["P1"]["reason"]  # in full, line breaks and all
    assert weak["questions"]["P1"]["reason"].endswith(" end")


def test_junit_failure_bodies_carry_the_reasons(mixed, plan):
    suite = ET.fromstring(junit_xml(mixed, plan, suite="demo")).find("testsuite")
    assert suite is not None
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    body = cases["weak"].find("failure").text or ""  # type: ignore[union-attr]
    for cell in shortfalls(_by_key(mixed, "weak")):
        assert f"{cell.id} 0.00: " in body
        assert f"judge: {xml_safe(reason_excerpt(cell) or '')}" in body


def test_a_junit_regression_body_quotes_the_judges_reason(regressed):
    plan, results, comparison = regressed
    suite = ET.fromstring(junit_xml(results, plan, suite="demo", comparison=comparison))
    fine = next(c for c in suite.iter("testcase") if c.get("name") == "fine")
    (failure,) = fine.findall("failure")
    assert "judge: Reason for P2: the reply 'All good, re' was judged so so" in (failure.text or "")


def test_html_shows_each_reason_in_full_and_escaped(mixed, plan, hostile):
    page = html_report(mixed, plan, suite="demo")
    unscored = sum(len(r.unscored) for r in mixed)
    assert page.count('<td class="reason">Reason for ') == sum(len(r.cells) for r in mixed) - 1
    assert unscored == 1
    assert "was judged" + " so" * 60 + " &lt;script&gt;window.canonPwned" in page
    # an unscored cell's failure is said once on its card, escaped, not in its table row
    said = '<ul class="judge-failures"><li>judge failed on 1 question(s): rate limited after 3'
    assert page.count(said) == 1 and "retries &lt;b&gt;&amp;&lt;/b&gt;" in page


def test_html_folds_each_artifact_text_away_and_titles_the_page_by_the_suite(mixed, plan):
    texts = {"fine": "All good, refunded 10 EUR.", "weak": "WEAK <answer> & more"}
    page = html_report(mixed, plan, suite="suite", texts=texts)
    assert "<title>Canon report: suite</title>" in page and "suite suite" not in page
    assert page.count('<details class="text">') == 2  # only the artifacts given a text
    assert "<details open" not in page
    assert '<pre class="artifact-text">WEAK &lt;answer&gt; &amp; more</pre>' in page


def test_failure_message_lists_only_questions_below_full_marks_with_reasons(mixed):
    weak = _by_key(mixed, "weak")
    message = failure_message(weak)
    assert "lowest-scoring questions:" in message
    assert "(1.00)" not in message
    assert message.count("judge's reason: Reason for ") == 3

    # non-canon for an unscored question alone: the perfect answers explain nothing
    mission, scope = _questions(mixed, "mission", "scope")
    perfect = score_cell(mission, Answer({"yes": 1.0}))
    down = judge_verdict("k", [perfect, unscored_cell(scope, "timed out")], threshold=0.85)
    assert not down.canon
    assert "lowest-scoring" not in failure_message(down)
    assert "(1.00)" not in failure_message(down)


def _questions(results, *ids):
    cells = {c.id: c for c in results[0].cells}
    return [cells[i].question for i in ids]


def test_a_cell_without_a_reason_gets_no_reason_line(mixed):
    (mission,) = _questions(mixed, "mission")
    cell = score_cell(mission, Answer({"no": 1.0}))
    assert falls_short(cell) and reason_excerpt(cell) is None
    result = judge_verdict("k", [cell], threshold=0.85)
    assert "judge:" not in render_results([result])
    assert "judge's reason" not in failure_message(result)


@pytest.mark.parametrize("count", [1, 100])
def test_skipped_gates_are_one_summary_line_however_many_artifacts(mixed, count):
    fine = _by_key(mixed, "fine")
    skip = (
        GateOutcome("policy", "skip", ("the artifact has no structured response",)),
        GateOutcome("contract", "skip", ("the artifact has no trace",)),
    )
    cells = fine.cells
    results = [judge_verdict(f"a{i}", cells, threshold=0.85, gates=skip) for i in range(count)]
    text = render_results(results)
    assert "gate skipped:" not in text
    (line,) = [line for line in text.splitlines() if "skipped" in line]
    assert line == (
        f"note: contract gate skipped for {count} of {count} artifact(s) (the artifact has no "
        f"trace); policy gate skipped for {count} of {count} artifact(s) (the artifact has no "
        "structured response)"
    )
    warned = judge_verdict("w", cells, 0.85, gates=(GateOutcome("contract", "warn", ("x",)),))
    assert "    note: contract gate warning: x" in render_results([warned])
