"""The answer cache through real `canon` processes talking HTTP to a local model server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from canon.core.evidence import DecisionRule

from support.cli import EXAMPLES, copy_example, run_canon
from support.model_judge import MODEL_JUDGE, model_env, model_project

SUITE = "artifacts:\n  - id: refund\n    text: {text}\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The example project with one artifact, scored by a model judge."""
    config = MODEL_JUDGE + "suite: one.yaml\nbaselines_dir: baselines\n"
    one = SUITE.format(text="I refunded the duplicate charge.")
    return model_project(tmp_path, config, {"one.yaml": one})


def _canon(project: Path, server: Any, *args: str) -> Any:
    return run_canon(project, *args, env=model_env(server.base_url))


def test_a_second_score_reuses_every_answer_and_no_cache_asks_again(project, fake_llm):
    fake_llm.script("contradict any part", "ANSWER: no")
    fake_llm.script("", "ANSWER: yes")
    first = _canon(project, fake_llm, "score", "--format", "json")
    assert first.returncode == 0, first.stderr
    assert len(fake_llm.requests) == 10 and "judge cache" not in first.stderr
    assert (project / ".canon" / "judge-cache.sqlite3").is_file()

    second = _canon(project, fake_llm, "score", "--format", "json")
    assert second.returncode == 0, second.stderr
    first_doc, second_doc = json.loads(first.stdout), json.loads(second.stdout)
    first_usage, second_usage = first_doc.pop("usage"), second_doc.pop("usage")
    assert second_doc == first_doc  # the same verdicts, and only the spending differs
    assert (first_usage["calls"], second_usage["calls"]) == (10, 0)
    assert second_usage["answers_without_call"] == 10
    assert len(fake_llm.requests) == 10
    assert "judge cache: 10 of 10 answer(s) reused" in second.stderr

    third = _canon(project, fake_llm, "score", "--no-cache", "--format", "json")
    assert third.returncode == 0 and len(fake_llm.requests) == 20
    assert "judge cache" not in third.stderr


def test_check_re_asks_a_flip_of_the_judge_itself_not_of_the_cache(project, fake_llm):
    fake_llm.script("contradict any part", "ANSWER: no")
    mission = fake_llm.script("serve the mission", "ANSWER: yes")
    fake_llm.script("", "ANSWER: yes")
    accepted = _canon(project, fake_llm, "accept", "--quiet")
    assert accepted.returncode == 0, accepted.stderr
    assert len(fake_llm.requests) == 20  # accept looks at each of the 10 questions twice

    # the same artifact id with a new text: its questions are asked anew, and the judge
    # now says the mission is not served, then takes it back when asked again
    (project / "one.yaml").write_text(SUITE.format(text="I refunded both charges, to be safe."))
    mission.replies, mission.hits = ("ANSWER: no", *["ANSWER: yes"] * 6), 0
    checked = _canon(project, fake_llm, "check", "--quiet")
    # 10 new questions, the changed artifact's second gate look and 6 re-asks (refuting a
    # claim takes six in a row: two could be a coin flip's): each a new variant with its
    # own cache key, asked of the judge, never the cached first answer
    assert len(fake_llm.requests) == 20 + 10 + 1 + 6
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "not repeated on re-ask" in checked.stdout


def test_an_unusable_cache_file_stops_the_run_with_one_line(project, fake_llm):
    fake_llm.script("contradict any part", "ANSWER: no")
    fake_llm.script("", "ANSWER: yes")
    cache = project / ".canon" / "judge-cache.sqlite3"
    cache.parent.mkdir()
    cache.write_bytes(b"definitely not an SQLite database " * 4)
    completed = _canon(project, fake_llm, "score")
    assert completed.returncode == 2
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("canon: error: ")
    assert "judge answer cache" in lines[0] and "--no-cache" in lines[0]
    assert fake_llm.requests == []
    assert _canon(project, fake_llm, "score", "--no-cache", "--quiet").returncode == 0


def test_a_mock_judge_run_writes_no_cache(tmp_path):
    target = copy_example(tmp_path)
    completed = run_canon(target, "score", "--quiet")
    assert completed.returncode in (0, 1), completed.stderr
    assert not (target / ".canon").exists()


def test_judge_cache_false_in_canon_yaml_turns_the_cache_off(project, fake_llm):
    fake_llm.script("", "ANSWER: yes")
    with (project / "canon.yaml").open("a") as config:
        config.write("judge_cache: false\n")
    for _ in range(2):
        assert _canon(project, fake_llm, "score", "--quiet").returncode in (0, 1)
    # every answer is "yes", the gate's too: each run confirms that contradiction anew
    per_run = 10 + DecisionRule().reasks_to_confirm(10)
    assert len(fake_llm.requests) == 2 * per_run
    assert not (project / ".canon").exists()


@pytest.mark.usefixtures("fake_llm_env")
def test_the_canon_metric_fixture_answers_from_the_cache_on_the_next_pytest_run(pytester, fake_llm):
    shutil.copy(EXAMPLES / "constitution.yaml", pytester.path / "constitution.yaml")
    (pytester.path / "canon.yaml").write_text(MODEL_JUDGE)
    pytester.makepyfile(
        test_reply="""
        def test_reply_coheres(canon_metric):
            canon_metric.assert_coheres("I refunded the duplicate charge (Section 4.2).")
        """
    )
    fake_llm.script("contradict any part", "ANSWER: no")
    fake_llm.script("", "ANSWER: yes")
    pytester.runpytest_subprocess("-q").assert_outcomes(passed=1)
    assert len(fake_llm.requests) == 10
    pytester.runpytest_subprocess("-q").assert_outcomes(passed=1)
    assert len(fake_llm.requests) == 10
    pytester.runpytest_subprocess("-q", "--canon-no-cache").assert_outcomes(passed=1)
    assert len(fake_llm.requests) == 20


def test_damaged_cache_entries_are_discarded_asked_again_and_noted(project, fake_llm):
    import sqlite3

    fake_llm.script("contradict any part", "ANSWER: no")
    fake_llm.script("", "ANSWER: yes")
    first = _canon(project, fake_llm, "score", "--format", "json", "--quiet")
    assert first.returncode == 0, first.stderr
    cache = project / ".canon" / "judge-cache.sqlite3"
    with sqlite3.connect(cache) as db:  # one entry garbled, one naming a label no one offers
        keys = [row[0] for row in db.execute("SELECT key FROM answers ORDER BY key LIMIT 2")]
        db.execute("UPDATE answers SET answer = 'garbled{' WHERE key = ?", (keys[0],))
        db.execute(
            "UPDATE answers SET answer = ? WHERE key = ?",
            ('{"distribution": {"maybe": 1.0}, "rationale": null}', keys[1]),
        )
    second = _canon(project, fake_llm, "score", "--format", "json", "--quiet")
    assert second.returncode == 0, second.stderr  # never exit 3 ("run again") for a bad entry

    def verdicts(stdout: str) -> dict:
        document = json.loads(stdout)
        document.pop("usage", None)  # the second run answers most questions from the cache
        return document

    assert verdicts(second.stdout) == verdicts(first.stdout) and len(fake_llm.requests) == 12
    assert f"discarded 2 unreadable entries in {cache}" in second.stderr
    third = _canon(project, fake_llm, "score", "--quiet")
    assert third.returncode == 0 and len(fake_llm.requests) == 12  # the entries were mended
    assert "discarded" not in third.stderr
