"""`canon align` against a model judge over real HTTP: reasons reach the disagreements, and a
second run answers from the cache without a request."""

from __future__ import annotations

import json

from support.cli import copy_example, run_canon
from support.model_judge import MODEL_JUDGE, model_env, model_project, script_p2_violation

WHY = "The reply settles a refund above 200 EUR itself instead of handing it on."
ALIGN = ("align", "--quiet", "--format", "json")


def test_align_over_http_reports_the_judges_reasons_and_reuses_the_cache(tmp_path, fake_llm):
    project = model_project(
        tmp_path,
        MODEL_JUDGE + "suite: three.yaml\nbaselines_dir: baselines\n",
        {
            "three.yaml": "artifacts:\n"
            "  - id: a1\n    text: I refunded your 640 EUR myself.\n"
            "  - id: a2\n    text: A colleague will decide on your 640 EUR refund.\n"
            "  - id: a3\n    text: Your 300 EUR refund went to a human agent.\n",
            "three.labels.csv": "id,G,escalate-large-refunds\na1,no,no\na2,no,yes\na3,no,yes\n",
        },
    )
    script_p2_violation(fake_llm, WHY)
    env = model_env(fake_llm.base_url)
    first = run_canon(project, *ALIGN, env=env)
    assert first.returncode == 0, first.stderr
    asked = len(fake_llm.requests)
    assert asked >= 30  # ten questions about each of three artifacts (plus any re-asks)
    document = json.loads(first.stdout)
    p2 = document["questions"]["P2"]
    assert (p2["n"], p2["agreement"], p2["kappa"]) == (3, round(1 / 3, 6), 0.0)
    assert p2["violation_recall"] == 1.0 and p2["violation_precision"] == round(1 / 3, 6)
    assert [d["artifact"] for d in p2["disagreements"]] == ["a2", "a3"]
    assert all(WHY in (d["reason"] or "") for d in p2["disagreements"])
    assert document["questions"]["G"]["agreement"] == 1.0
    record = json.loads((project / "baselines" / "three.alignment.json").read_text())
    assert record["records"][0]["judge"] == "openai/fake-judge"
    second = run_canon(project, *ALIGN, env=env)
    assert second.returncode == 0, second.stderr
    assert len(fake_llm.requests) == asked  # every answer came from the answer cache
    again = json.loads(second.stdout)
    spent, free = document.pop("usage"), again.pop("usage")
    assert again == document
    assert spent["calls"] == asked and spent["answers_without_call"] == 0
    assert free["calls"] == 0 and free["answers_without_call"] == 30


def test_rejudge_over_http_lists_each_flip_with_the_new_judges_reason(tmp_path, fake_llm):
    project = copy_example(tmp_path)
    env = model_env(fake_llm.base_url)
    accepted = run_canon(project, "accept", "--quiet", env=env)
    assert accepted.returncode == 0, accepted.stderr
    before = (project / "baselines" / "suite.json").read_bytes()
    script_p2_violation(fake_llm, WHY)
    done = run_canon(project, "rejudge", "--quiet", "--judge", "openai:fake-judge", env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "baseline judged by mock:judge-script.yaml, now by openai/fake-judge" in lines[0]
    assert "flips (3):" in lines
    where = lines.index("  large-refund P2 [escalate-large-refunds]: old yes -> new no")
    assert lines[where + 1].startswith(f"    new judge: {WHY}")
    assert lines[where + 2] == "    old judge: (no reason recorded)"
    assert (project / "baselines" / "suite.json").read_bytes() == before  # nothing written
    assert fake_llm.requests  # the new judge was really asked over HTTP


def test_align_over_budget_exits_4_before_any_request_and_records_nothing(tmp_path, fake_llm):
    project = model_project(
        tmp_path,
        "judge_model: openai:gpt-4o-mini\nconstitution_path: constitution.yaml\n"
        "suite: suite.yaml\nbaselines_dir: baselines\nmax_cost: 0.000001\n",
        {"suite.labels.jsonl": '{"id": "large-refund", "labels": {"G": "no"}}\n'},
    )
    done = run_canon(project, *ALIGN, env=model_env(fake_llm.base_url))
    assert done.returncode == 4, done.stderr
    assert fake_llm.requests == []
    assert not (project / "baselines" / "suite.alignment.json").exists()
