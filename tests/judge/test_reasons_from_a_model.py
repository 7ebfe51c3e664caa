"""A model judge's own words reach every report, through a real `canon score` process."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from support.cli import run_canon
from support.model_judge import P2_MATCH, model_env, script_p2_violation

P2 = "Hand any refund above 200 EUR"
WHY = "The reply decided a 640 EUR refund itself instead of handing it to a human agent."


def test_the_judges_reason_for_a_violated_principle_is_in_text_junit_and_html(
    refund_project, fake_llm
):
    script_p2_violation(fake_llm, WHY)
    done = run_canon(
        refund_project,
        *("score", "--quiet", "--junit-xml", "r.xml", "--html", "r.html"),
        env=model_env(fake_llm.base_url),
    )
    # 8 of 9 scored questions average 0.889, but a confirmed "no" on a principle is a plain
    # violation: non-canon whatever the average (part of the gate)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    where = lines.index(
        "    P2 [escalate-large-refunds] 0.00: Hand any refund above 200 EUR to a human agent "
        "instead of deciding it."
    )
    assert lines[where + 1] == f"        judge: {WHY} ANSWER: no"
    case = ET.parse(refund_project / "r.xml").getroot().find("testsuite/testcase")
    failure = None if case is None else case.find("failure")
    assert failure is not None and "principle P2 plainly violated" in (failure.get("message") or "")
    assert WHY in (failure.text or "")  # the judge's reason reaches the JUnit failure
    assert f"{WHY}\nANSWER: no" in (refund_project / "r.html").read_text()


def test_a_violation_whose_re_asks_all_fail_is_incomplete_never_canon(refund_project, fake_llm):
    # P2 reads violated on its first ask; every re-ask (its other wordings) fails with a 503
    # until the retries run out. The violation can be neither confirmed nor cleared: it was
    # reported "not counted as a failure" and the reply canon (exit 0). A judge's failure is
    # never a pass: the question is unscored and the run says the judge was unavailable.
    fake_llm.script(P2_MATCH, f"{WHY}\nANSWER: no", hot="503")  # re-asks sample hot
    script_p2_violation(fake_llm, WHY)
    done = run_canon(refund_project, "score", "--quiet", env=model_env(fake_llm.base_url))
    assert done.returncode == 3, done.stdout + done.stderr
    assert "the judge was unavailable" in done.stderr
    assert "re-asking the judge failed" in done.stdout and "INCOMPLETE" in done.stdout
    assert "undecided, never a pass" in done.stdout
    assert "not counted as a failure" not in done.stdout
    retried = [r for r in fake_llm.requests if P2 in json.dumps(r) and r.get("temperature")]
    assert retried, "P2 was never re-asked: nothing here tests a failed re-ask"
