"""In structured mode the judge writes a reason before its answer, and every report quotes it.

The judge is a fake OpenAI-compatible server on 127.0.0.1 answering JSON under the schema,
as a real endpoint that honours ``response_format`` does; `canon` runs as a real process.
"""

from __future__ import annotations

import asyncio
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from canon.check.metric import CoherenceMetric
from canon.judge.answer_formats import REASON_MAX_LENGTH, answer_schema
from canon.judge.cache import answer_key
from canon.judge.replies import RATIONALE_LIMIT
from canon.project.store import constitution_from_file

from support.cli import EXAMPLES, invoke_in, run_canon
from support.model_judge import P2_MATCH, model_env

WHY = "The reply decided a 640 EUR refund itself instead of handing it to a human agent."
GATE_WHY = "Refunding 640 EUR without a human goes against the escalation principle."


def _json(answer: str, reason: str | None = None) -> str:
    fields = {"answer": answer} if reason is None else {"reason": reason, "answer": answer}
    return json.dumps(fields)


def _script_violation(fake_llm: Any) -> None:
    fake_llm.script("contradict any part", _json("yes", GATE_WHY))
    fake_llm.script("surface the tradeoff", _json("n/a", "Nothing pulls apart."))
    fake_llm.script(P2_MATCH, _json("no", WHY))
    fake_llm.script("", _json("yes", "Fine on this point."))


def _canon(project: Path, base_url: str, *args: str) -> Any:
    return run_canon(project, *args, env=model_env(base_url))


def test_the_schema_asks_for_a_bounded_reason_before_the_answer(questions):
    schema = answer_schema(questions["P1"])["json_schema"]["schema"]
    assert list(schema["properties"]) == ["reason", "answer"]  # generation order
    assert schema["required"] == ["reason", "answer"]
    assert schema["properties"]["reason"]["maxLength"] == REASON_MAX_LENGTH
    bare = answer_schema(questions["P1"], reasons=False)["json_schema"]["schema"]
    assert list(bare["properties"]) == ["answer"] and bare["required"] == ["answer"]


def test_a_json_reason_becomes_the_answers_rationale_and_not_the_raw_json(
    fake_llm, make_judge, ask, questions
):
    fake_llm.script("", _json("no", WHY))
    answer = asyncio.run(make_judge().answer(ask(questions["P1"], "I refunded it.")))
    assert answer.distribution == {"no": 1.0}
    assert answer.rationale == WHY
    sent = fake_llm.requests[0]["response_format"]["json_schema"]["schema"]
    assert list(sent["properties"]) == ["reason", "answer"]


def test_a_long_reason_is_cut_and_a_json_reply_without_one_has_no_rationale(
    fake_llm, make_judge, ask, questions
):
    fake_llm.script("cut", _json("no", "x" * 5000))
    fake_llm.script("", _json("yes"))
    judge = make_judge()
    long = asyncio.run(judge.answer(ask(questions["P1"], "cut")))
    assert long.rationale == "x" * RATIONALE_LIMIT
    bare = asyncio.run(judge.answer(ask(questions["P1"], "plain")))
    assert bare.distribution == {"yes": 1.0} and bare.rationale is None


def test_reasons_off_sends_the_schema_without_a_reason_and_keys_the_cache_apart(
    fake_llm, make_judge, ask, questions
):
    fake_llm.script("", _json("yes"))
    judge = make_judge(reasons=False)
    answer = asyncio.run(judge.answer(ask(questions["P1"], "I refunded it.")))
    assert answer.distribution == {"yes": 1.0}
    sent = fake_llm.requests[0]["response_format"]["json_schema"]["schema"]
    assert list(sent["properties"]) == ["answer"]
    request = ask(questions["P1"], "I refunded it.")
    on = answer_key(make_judge().cache_identity(), request)
    off = answer_key(judge.cache_identity(), request)
    assert on != off


def test_reasons_must_be_true_or_false_in_canon_yaml(refund_project):
    (refund_project / "canon.yaml").write_text(
        (refund_project / "canon.yaml").read_text() + "judge_options:\n  reasons: maybe\n"
    )
    result = invoke_in(refund_project, "score", "--quiet")
    assert result.exit_code == 2
    assert "reasons" in result.output and "true or false" in result.output


@pytest.mark.usefixtures("fake_llm_env")
def test_reasons_off_in_canon_yaml_reaches_the_request(refund_project, fake_llm):
    (refund_project / "canon.yaml").write_text(
        (refund_project / "canon.yaml").read_text() + "judge_options:\n  reasons: false\n"
    )
    fake_llm.script("contradict any part", _json("no"))
    fake_llm.script("surface the tradeoff", _json("n/a"))
    fake_llm.script("", _json("yes"))
    result = invoke_in(refund_project, "score", "--quiet")
    assert result.exit_code == 0, result.output
    schemas = [r["response_format"]["json_schema"]["schema"] for r in fake_llm.requests]
    assert schemas and all(list(s["properties"]) == ["answer"] for s in schemas)


def test_structured_reasons_reach_text_junit_and_html_from_a_real_process(refund_project, fake_llm):
    _script_violation(fake_llm)
    done = _canon(
        refund_project,
        fake_llm.base_url,
        "score",
        "--quiet",
        "--junit-xml",
        "r.xml",
        "--html",
        "r.html",
    )
    assert done.returncode == 1, done.stderr  # the NSCP gate tripped: non-canon
    assert f"        judge: {WHY}" in done.stdout.splitlines()
    assert f"        judge: {GATE_WHY}" in done.stdout.splitlines()
    assert '{"' not in done.stdout  # the reason, never the raw JSON reply
    failure = ET.parse(refund_project / "r.xml").getroot().find("testsuite/testcase/failure")
    assert failure is not None and failure.text is not None
    assert f"judge: {WHY}" in failure.text and f"judge: {GATE_WHY}" in failure.text
    page = (refund_project / "r.html").read_text()
    assert WHY in page and GATE_WHY in page and "&quot;answer&quot;" not in page


def test_structured_reasons_reach_json_and_github_output(refund_project, fake_llm):
    _script_violation(fake_llm)
    done = _canon(refund_project, fake_llm.base_url, "score", "--quiet", "--format", "json")
    assert done.returncode == 1, done.stderr
    questions = json.loads(done.stdout)["artifacts"][0]["questions"]
    assert questions["P2"]["reason"] == WHY
    assert questions["G"]["reason"] == GATE_WHY
    github = _canon(refund_project, fake_llm.base_url, "score", "--quiet", "--format", "github")
    assert github.returncode == 1, github.stderr
    error = next(line for line in github.stdout.splitlines() if line.startswith("::error"))
    assert f"judge: {WHY}" in error and f"judge: {GATE_WHY}" in error


@pytest.mark.usefixtures("fake_llm_env")
def test_a_checks_regression_quotes_the_structured_reason(refund_project, fake_llm):
    fake_llm.script("contradict any part", _json("no", "No contradiction."))
    fake_llm.script("surface the tradeoff", _json("n/a", "Nothing pulls apart."))
    p2 = fake_llm.script(P2_MATCH, _json("yes", "It handed the refund over."))
    fake_llm.script("", _json("yes", "Fine on this point."))
    accepted = invoke_in(refund_project, "accept", "--quiet")
    assert accepted.exit_code == 0, accepted.output
    p2.replies = [_json("no", WHY)]  # the agent changed: now it decides the refund itself
    suite = refund_project / "one.yaml"  # and its reply reads differently (a new text)
    suite.write_text(suite.read_text().replace("myself.", "myself, today."))
    checked = invoke_in(refund_project, "check", "--quiet")
    assert checked.exit_code == 1, checked.output
    lines = checked.output.splitlines()
    flip = next(i for i, line in enumerate(lines) if "big-refund P2" in line)
    assert "REGRESSION" in lines[flip]
    assert lines[flip + 1] == f"    judge: {WHY}"
    as_json = invoke_in(refund_project, "check", "--quiet", "--format", "json")
    assert as_json.exit_code == 1
    assert WHY in as_json.output


def test_assert_coheres_quotes_the_structured_reason(fake_llm, make_judge):
    _script_violation(fake_llm)
    metric = CoherenceMetric(
        constitution=constitution_from_file(EXAMPLES / "constitution.yaml"), judge=make_judge()
    )
    with pytest.raises(AssertionError) as info:
        metric.assert_coheres("I refunded your 640 EUR myself.")
    assert f"judge's reason: {WHY}" in str(info.value)
    assert f"judge's reason: {GATE_WHY}" in str(info.value)
