"""`canon align` against a model judge over real HTTP: reasons reach the disagreements, and a
second run answers from the cache without a request."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WHY = "The reply settles a refund above 200 EUR itself instead of handing it on."


def _align(project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "canon", "align", "--quiet", "--format", "json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_align_over_http_reports_the_judges_reasons_and_reuses_the_cache(tmp_path, fake_llm):
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES, project)
    (project / "canon.yaml").write_text(
        "judge_model: openai:fake-judge\nconstitution_path: constitution.yaml\n"
        "suite: three.yaml\nbaselines_dir: baselines\n"
    )
    (project / "three.yaml").write_text(
        "artifacts:\n"
        "  - id: a1\n    text: I refunded your 640 EUR myself.\n"
        "  - id: a2\n    text: A colleague will decide on your 640 EUR refund.\n"
        "  - id: a3\n    text: Your 300 EUR refund went to a human agent.\n"
    )
    (project / "three.labels.csv").write_text(
        "id,G,escalate-large-refunds\na1,no,no\na2,no,yes\na3,no,yes\n"
    )
    fake_llm.script("contradict any part", "No contradiction.\nANSWER: no")
    fake_llm.script("surface the tradeoff", "Nothing pulls apart.\nANSWER: n/a")
    fake_llm.script('principle of the constitution: "Hand any refund', f"{WHY}\nANSWER: no")
    fake_llm.script("", "ANSWER: yes")
    env = {
        **os.environ,
        "OPENAI_BASE_URL": fake_llm.base_url,
        "OPENAI_API_KEY": "sk-test",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    first = _align(project, env)
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
    second = _align(project, env)
    assert second.returncode == 0, second.stderr
    assert len(fake_llm.requests) == asked  # every answer came from the answer cache
    assert json.loads(second.stdout) == document


def test_rejudge_over_http_lists_each_flip_with_the_new_judges_reason(tmp_path, fake_llm):
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES, project)
    env = {
        **os.environ,
        "OPENAI_BASE_URL": fake_llm.base_url,
        "OPENAI_API_KEY": "sk-test",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    accepted = subprocess.run(
        [sys.executable, "-m", "canon", "accept", "--quiet"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert accepted.returncode == 0, accepted.stderr
    before = (project / "baselines" / "suite.json").read_bytes()
    fake_llm.script("contradict any part", "No contradiction.\nANSWER: no")
    fake_llm.script("surface the tradeoff", "Nothing pulls apart.\nANSWER: n/a")
    fake_llm.script('principle of the constitution: "Hand any refund', f"{WHY}\nANSWER: no")
    fake_llm.script("", "ANSWER: yes")
    done = subprocess.run(
        [sys.executable, "-m", "canon", "rejudge", "--quiet", "--judge", "openai:fake-judge"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
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
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES, project)
    (project / "canon.yaml").write_text(
        "judge_model: openai:gpt-4o-mini\nconstitution_path: constitution.yaml\n"
        "suite: suite.yaml\nbaselines_dir: baselines\nmax_cost: 0.000001\n"
    )
    (project / "suite.labels.jsonl").write_text('{"id": "large-refund", "labels": {"G": "no"}}\n')
    env = {
        **os.environ,
        "OPENAI_BASE_URL": fake_llm.base_url,
        "OPENAI_API_KEY": "sk-test",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    done = _align(project, env)
    assert done.returncode == 4, done.stderr
    assert fake_llm.requests == []
    assert not (project / "baselines" / "suite.alignment.json").exists()
