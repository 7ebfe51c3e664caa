from __future__ import annotations

import asyncio
import dataclasses
import xml.etree.ElementTree as ET

from canon.check.runner import score_artifacts
from canon.core.artifact import Artifact
from canon.core.compare import Drift
from canon.core.significance import DropTest
from canon.errors import JudgeUnavailableError
from canon.judge.mock import MockJudge
from canon.report.junit import junit_xml, xml_safe


def _suite(text: str) -> ET.Element:
    root = ET.fromstring(text)
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    return suite


def _cases(suite: ET.Element) -> dict[str, ET.Element]:
    return {case.get("name", ""): case for case in suite.findall("testcase")}


def _counts(element: ET.Element) -> dict[str, str | None]:
    return {name: element.get(name) for name in ("tests", "failures", "errors", "skipped")}


def test_junit_counts_match_the_scored_results(mixed, plan):
    text = junit_xml(mixed, plan, suite="demo")
    root = ET.fromstring(text)
    suite = _suite(text)
    expected = {"tests": "5", "failures": "3", "errors": "1", "skipped": "0"}
    assert _counts(suite) == expected and _counts(root) == expected
    assert suite.get("name") == "canon"
    cases = suite.findall("testcase")
    assert len(cases) == len(mixed)
    assert sum(c.find("failure") is not None for c in cases) == 3
    assert sum(c.find("error") is not None for c in cases) == 1


def test_each_artifact_is_a_testcase_named_by_key_under_the_suite_classname(mixed, plan):
    suite = _suite(junit_xml(mixed, plan, suite="demo"))
    names = [case.get("name") for case in suite.findall("testcase")]
    assert names == [xml_safe(r.key) for r in mixed]
    assert {case.get("classname") for case in suite.findall("testcase")} == {"canon.demo"}
    fine = _cases(suite)["fine"]
    assert fine.find("failure") is None and fine.find("error") is None
    assert "score 1.000" in (fine.findtext("system-out") or "")


def test_non_canon_artifacts_fail_with_their_reasons(mixed, plan):
    cases = _cases(_suite(junit_xml(mixed, plan, suite="demo")))
    gated = cases["contradicts"].find("failure")
    assert gated is not None and gated.get("type") == "non-canon"
    assert "NSCP gate" in (gated.get("message") or "") and "NSCP gate" in (gated.text or "")
    weak = cases["weak"].find("failure")
    assert weak is not None and "below the threshold 0.850" in (weak.text or "")


def test_unscored_questions_are_an_error_never_a_pass(mixed, plan):
    case = _cases(_suite(junit_xml(mixed, plan, suite="demo")))["judge-down"]
    assert case.find("failure") is None
    error = case.find("error")
    assert error is not None and error.get("type") == "judge-unavailable"
    assert "1 question(s) unscored" in (error.get("message") or "")
    assert error.text == "mission: rate limited after 3 retries <b>&</b>"


def test_properties_record_rubric_judge_constitution_and_threshold(mixed, plan):
    suite = _suite(junit_xml(mixed, plan, suite="demo", elapsed=1.25))
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    usage = {k: v for k, v in properties.items() if k and k.startswith("usage.")}
    assert usage["usage.calls"] == "0"  # a scripted judge makes no model calls
    properties = {k: v for k, v in properties.items() if k not in usage}
    assert properties == {
        "rubric.id": "cdt",
        "rubric.version": plan.rubric.version,
        "rubric.fingerprint": plan.rubric.fingerprint,
        "judge": "mock:test",
        "constitution": plan.constitution.digest,
        "threshold": "0.85",
    }
    assert suite.get("time") == "1.250"
    assert suite[0].tag == "properties"  # JUnit readers expect properties first


def test_hostile_keys_and_reasons_round_trip_as_text(mixed, plan, hostile):
    text = junit_xml(mixed, plan, suite="demo")
    assert "<script>" not in text and "\x01" not in text
    shown = hostile.replace("\x01", "\\x01")
    case = _cases(_suite(text))[shown]
    failure = case.find("failure")
    assert failure is not None
    assert f"rule {shown} failed" in (failure.text or "")
    assert f"rule {shown} failed" in (failure.get("message") or "")
    assert "<script>window.canonPwned = 1; alert(1)</script> ]]> \"dq\" 'sq' &" in shown


def test_xml_safe_makes_every_forbidden_character_visible():
    text = "a\x00b\x08c\x0bd\x1fe\ud800f\uffffg\tok\nok\rok\u00e9\U0001f600"
    assert xml_safe(text) == "a\\x00b\\x08c\\x0bd\\x1fe\\xd800f\\xffffg\tok\nok\rok\u00e9\U0001f600"
    ET.fromstring(f"<a>{xml_safe(text)}</a>".encode())


def test_check_adds_regressions_the_drift_case_skipped_missing_and_notes(regressed):
    plan, results, comparison = regressed
    suite = _suite(junit_xml(results, plan, suite="demo", comparison=comparison))
    cases = _cases(suite)
    assert list(cases) == ["fine", "also-fine", "weak", "gone", "mean-drift"]
    assert cases["mean-drift"].get("classname") == "canon.demo.check"
    assert cases["fine"].get("classname") == "canon.demo"
    (flip,) = cases["fine"].findall("failure")
    assert flip.get("type") == "regression" and "P2" in (flip.get("message") or "")
    assert "Hand any refund above 200 EUR" in (flip.text or "")
    assert "confirmed" in (flip.text or "")
    # The re-ask failed: no evidence either way, so an error, not a failure and not a pass.
    error = cases["also-fine"].find("error")
    assert cases["also-fine"].find("failure") is None
    assert error is not None and error.get("type") == "judge-unavailable"
    # 'weak' was non-canon in the baseline too: a known failure, reported but not failed
    assert cases["weak"].findall("failure") == []
    known = cases["weak"].find("skipped")
    assert known is not None and "known failure" in (known.get("message") or "")
    skipped = cases["gone"].find("skipped")
    assert skipped is not None and "not in this run" in (skipped.get("message") or "")
    drift_failed = cases["mean-drift"].find("failure") is not None
    assert drift_failed == comparison.drift.regressed
    assert _counts(suite) == {
        "tests": "5",
        "failures": str(1 + drift_failed),
        "errors": "1",
        "skipped": "2",
    }
    out = suite.findtext("system-out") or ""
    assert all(note in out for note in comparison.notes)
    assert "re-asking the judge failed" in out
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["status"] == comparison.status and properties["tolerance"] == "0.02"


def test_a_significant_mean_drop_fails_the_drift_case_with_its_numbers(regressed):
    plan, results, comparison = regressed
    test = DropTest("paired", 3, 0.3, 0.001, 0.05, True, "paired t-test over 3 artifacts")
    comparison = dataclasses.replace(comparison, drift=Drift(0.9, 0.6, 0.02, test))
    case = _cases(_suite(junit_xml(results, plan, suite="demo", comparison=comparison)))[
        "mean-drift"
    ]
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == "regression"
    body = failure.text or ""
    assert "baseline mean 0.900, current mean 0.600, drop 0.300, tolerance 0.020" in body
    assert "one-sided p = 0.001" in body and "smallest drop this check could flag: 0.050" in body


def test_drift_that_could_not_be_tested_is_skipped(regressed):
    plan, results, comparison = regressed
    test = DropTest("none", 1, 0.1, None, None, False, "one pair is too few to test")
    comparison = dataclasses.replace(comparison, drift=Drift(0.9, 0.8, 0.02, test))
    case = _cases(_suite(junit_xml(results, plan, suite="demo", comparison=comparison)))[
        "mean-drift"
    ]
    skipped = case.find("skipped")
    assert skipped is not None and "one pair is too few" in (skipped.get("message") or "")


def test_the_document_is_deterministic_and_declares_utf8(mixed, plan):
    first = junit_xml(mixed, plan, suite="demo")
    assert first == junit_xml(mixed, plan, suite="demo")
    assert first.startswith("<?xml version='1.0' encoding='utf-8'?>")
    assert first.endswith("</testsuites>\n")


def test_an_artifact_that_fails_and_has_unscored_questions_counts_once_as_a_failure(plan):
    def gated_and_down(question, text):
        if question.id == "P3":
            raise JudgeUnavailableError("timed out")
        return "yes" if question.kind == "gate" else "n/a" if question.id == "tradeoff" else "yes"

    broken = dataclasses.replace(plan, judge=MockJudge(gated_and_down))
    results = asyncio.run(score_artifacts(broken, [Artifact("a")]))
    suite = _suite(junit_xml(results, plan, suite="demo"))
    assert _counts(suite) == {"tests": "1", "failures": "1", "errors": "0", "skipped": "0"}
    (case,) = suite.findall("testcase")
    assert case.find("error") is None
    assert "unscored P3: timed out" in (case.findtext("system-out") or "")
