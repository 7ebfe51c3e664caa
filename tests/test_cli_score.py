from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from canon.cli import main

from support.cli import invoke_in, one_error_line

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the bundled example project."""
    target = tmp_path / "project"
    shutil.copytree(EXAMPLES, target)
    return target


def _run(project: Path, *args: str):
    runner = CliRunner()
    cwd = os.getcwd()
    os.chdir(project)
    try:
        return runner.invoke(main, ["score", *args], catch_exceptions=False)
    finally:
        os.chdir(cwd)


def test_score_on_the_example_reports_every_artifact_canon(project):
    result = _run(project, "--quiet")
    assert result.exit_code == 0, result.output
    assert "3 canon, 0 non-canon" in result.stdout
    assert "duplicate-charge" in result.stdout


def test_score_exits_1_and_explains_a_non_canon_artifact(project):
    (project / "judge-script.yaml").write_text('contradict any part: "yes"\n__default__: "yes"\n')
    result = _run(project, "--quiet")
    assert result.exit_code == 1
    assert "NON-CANON" in result.stdout and "NSCP gate" in result.stdout
    assert "0 canon, 3 non-canon" in result.stdout


def test_score_json_output_is_machine_readable(project):
    result = _run(project, "--quiet", "--format", "json")
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert document["rubric"]["id"] == "cdt"
    assert document["summary"] == {
        "artifacts": 3,
        "canon": 3,
        "non_canon": 0,
        "incomplete": 0,
        "unscored_questions": 0,
        "refused_questions": 0,
        "judge_failures": [],
    }
    first = document["artifacts"][0]
    assert first["questions"]["P2"]["subject"].startswith("Hand any refund above 200 EUR")
    assert first["questions"]["tradeoff"]["state"] == "na"


def test_progress_lines_go_to_stderr(project):
    result = _run(project)
    assert "[3/3]" in result.stderr
    assert "[3/3]" not in result.stdout


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (("constitution.yaml", "principles: []\n"), "'mission' is missing"),
        (("canon.yaml", "rubric: x\n"), "fixed, versioned rubric"),
        (
            (
                "canon.yaml",
                "judge_model: gpt-4o\nconstitution_path: constitution.yaml\nsuite: suite.yaml\n",
            ),
            "not of the form provider:model",
        ),
        (
            (
                "canon.yaml",
                "judge_model: mock:judge-script.yaml\nconstitution_path: c.yaml\n"
                "suite: suite.yaml\n",
            ),
            "constitution not found",
        ),
        (
            (
                "canon.yaml",
                "judge_model: mock:judge-script.yaml\nconstitution_path: constitution.yaml\n",
            ),
            "no suite to score",
        ),
        (("suite.yaml", "artifacts: []\n"), "'artifacts' must be a non-empty list"),
        (("suite.yaml", "artifacts:\n  - text: a\n    idd: x\n"), "unknown key(s) 'idd'"),
        (("suite.yaml", "artifacts:\n  - a\n  - a\n"), "same key"),
        (("judge-script.yaml", "- yes\n"), "non-empty mapping"),
    ],
)
def test_bad_input_exits_2_with_one_line_on_stderr(project, edit, fragment):
    name, text = edit
    (project / name).write_text(text)
    result = _run(project, "--quiet")
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("canon: error: ")
    assert fragment in lines[0]


def test_a_mis_scripted_judge_is_bad_input_not_a_traceback(project):
    (project / "judge-script.yaml").write_text('serve the mission: "yes"\n')
    result = _run(project, "--quiet")
    assert result.exit_code == 2
    assert "MockJudge has no answer for question" in result.stderr


def test_canon_score_runs_as_a_real_process(project):
    completed = subprocess.run(
        [sys.executable, "-m", "canon.cli", "score", "--format", "json", "--quiet"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["summary"]["canon"] == 3


def test_a_real_process_turns_bad_config_into_exit_2(project):
    (project / "canon.yaml").write_text("threshold: nine\n")
    completed = subprocess.run(
        [sys.executable, "-m", "canon.cli", "score"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 2
    assert "Traceback" not in completed.stderr
    assert "'threshold' must be a number in [0, 1]" in completed.stderr


def test_a_model_judge_that_cannot_be_reached_exits_3_not_1(project, monkeypatch):
    import socket

    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{closed_port}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (project / "canon.yaml").write_text(
        "judge_model: openai:gpt-4o\nconstitution_path: constitution.yaml\nsuite: suite.yaml\n"
    )
    result = _run(
        project, "--quiet", "--format", "json", "--junit-xml", "r.xml", "--html", "r.html"
    )
    assert result.exit_code == 3, result.output
    document = json.loads(result.stdout)
    assert document["summary"]["canon"] == 0
    assert document["summary"]["unscored_questions"] == 30
    assert "Traceback" not in result.stderr
    # The reports are written all the same, every artifact an error and none a pass.
    counts, cases = _junit(project / "r.xml")
    assert counts == {"tests": "3", "failures": "0", "errors": "3", "skipped": "0"}
    error = cases["large-refund"].find("error")
    assert error is not None and "10 question(s) unscored" in (error.get("message") or "")
    assert (project / "r.html").read_text().count('data-verdict="incomplete"') == 3


# --- --junit-xml and --html ---------------------------------------------------------------


def _junit(path: Path) -> tuple[dict[str, str], dict[str, ET.Element]]:
    """The testsuite's counts and its testcases by name, from a written JUnit XML file."""
    (suite,) = ET.parse(path).getroot().findall("testsuite")
    counts = {k: suite.get(k, "") for k in ("tests", "failures", "errors", "skipped")}
    return counts, {case.get("name", ""): case for case in suite.findall("testcase")}


def test_reports_are_written_for_a_passing_run_and_stdout_is_unchanged(project):
    plain = _run(project, "--quiet")
    result = _run(project, "--quiet", "--junit-xml", "out/canon.xml", "--html", "out/canon.html")
    assert result.exit_code == 0, result.output
    assert result.stdout == plain.stdout
    counts, cases = _junit(project / "out" / "canon.xml")
    assert counts == {"tests": "3", "failures": "0", "errors": "0", "skipped": "0"}
    assert list(cases) == ["duplicate-charge", "large-refund", "roaming-question"]
    assert {case.get("classname") for case in cases.values()} == {"canon.suite"}
    page = (project / "out" / "canon.html").read_text(encoding="utf-8")
    assert page.count('data-verdict="canon"') == 3 and "ALL CANON" in page
    assert not list((project / "out").glob(".*.tmp"))  # the atomic writes left no temp file


def test_reports_are_written_when_the_run_is_non_canon(project):
    (project / "judge-script.yaml").write_text('contradict any part: "yes"\n__default__: "yes"\n')
    result = _run(project, "--quiet", "--junit-xml", "r.xml", "--html", "r.html")
    assert result.exit_code == 1
    counts, cases = _junit(project / "r.xml")
    assert counts == {"tests": "3", "failures": "3", "errors": "0", "skipped": "0"}
    failure = cases["large-refund"].find("failure")
    assert failure is not None and failure.get("type") == "non-canon"
    assert "NSCP gate" in (failure.text or "")
    assert (project / "r.html").read_text().count('data-verdict="non-canon"') == 3


def test_reports_record_unscored_questions_as_errors_when_the_judge_is_unavailable(
    project, monkeypatch
):
    import dataclasses

    import canon.cli.score as score_cli
    from canon.errors import JudgeUnavailableError
    from canon.judge.mock import MockJudge

    def down_for_one(question, text):
        if question.id == "mission" and text.startswith("I can see"):
            raise JudgeUnavailableError("rate limited after 3 retries")
        return {"G": "no", "tradeoff": "n/a"}.get(question.id, "yes")

    original = score_cli.build_plan
    monkeypatch.setattr(
        score_cli,
        "build_plan",
        lambda config, **options: dataclasses.replace(
            original(config, **options), judge=MockJudge(down_for_one)
        ),
    )
    result = _run(project, "--quiet", "--junit-xml", "r.xml", "--html", "r.html")
    assert result.exit_code == 3, result.output
    counts, cases = _junit(project / "r.xml")
    assert counts == {"tests": "3", "failures": "0", "errors": "1", "skipped": "0"}
    error = cases["duplicate-charge"].find("error")
    assert error is not None and error.get("type") == "judge-unavailable"
    assert error.text == "mission: rate limited after 3 retries"
    page = (project / "r.html").read_text()
    assert 'data-verdict="incomplete"' in page and "rate limited after 3 retries" in page


@pytest.mark.parametrize("option", ["--junit-xml", "--html"])
def test_a_report_path_that_cannot_be_written_exits_2_before_the_judge_is_asked(project, option):
    (project / "a-file").write_text("not a directory")
    result = _run(project, "--quiet", option, "a-file/report.out")
    assert result.exit_code == 2
    assert result.stdout == ""
    line = result.stderr.strip()
    assert line.startswith("canon: error: cannot write the report a-file/report.out")
    assert "a-file is not a directory" in line


def test_a_report_path_that_is_a_directory_is_refused(project):
    result = _run(project, "--quiet", "--junit-xml", ".")
    assert result.exit_code == 2
    assert "is a directory" in result.stderr


def test_a_real_process_writes_both_reports_with_hostile_artifact_ids(project):
    suite = project / "hostile.yaml"
    suite.write_text(
        "artifacts:\n"
        '  - id: "<script>window.canonPwned = 1</script> ]]> \'q\' \\"dq\\" \\x01"\n'
        "    text: I refunded the duplicate charge.\n",
        encoding="utf-8",
    )
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "canon.cli",
            "score",
            "--quiet",
            "--suite",
            "hostile.yaml",
            "--junit-xml",
            "reports/canon.xml",
            "--html",
            "reports/canon.html",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    counts, cases = _junit(project / "reports" / "canon.xml")
    assert counts["tests"] == "1" and counts["failures"] == "0"
    assert list(cases) == ["<script>window.canonPwned = 1</script> ]]> 'q' \"dq\" \\x01"]
    page = (project / "reports" / "canon.html").read_text(encoding="utf-8")
    assert "<script" not in page
    assert "&lt;script&gt;window.canonPwned = 1&lt;/script&gt; ]]&gt; &#x27;q&#x27;" in page


def test_score_in_an_empty_directory_points_at_canon_init(tmp_path):
    result = invoke_in(tmp_path, "score")
    assert result.exit_code == 2
    line = one_error_line(result)
    assert "canon init" in line and "no canon.yaml" in line


def test_the_progress_line_never_says_canon_for_an_artifact_the_run_fails(project):
    # A plain violation of a principle fails the artifact only once confirmation settles
    # it; the first pass reads canon, and the progress line used to say so. Each line now
    # comes once the artifact is settled, and gives the verdict the report gives.
    script = project / "judge-script.yaml"
    script.write_text('refund above 200: "no"\n' + script.read_text())
    result = invoke_in(project, "score")
    assert result.exit_code == 1
    progress = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert progress == [
        "[1/3] duplicate-charge NON-CANON",
        "[2/3] large-refund NON-CANON",
        "[3/3] roaming-question NON-CANON",
    ]
    assert result.stdout.count("NON-CANON") == 3
    # artifacts with nothing to confirm still read canon at once
    script.write_text(script.read_text().split("\n", 1)[1])
    calm = invoke_in(project, "score")
    assert "[1/3] duplicate-charge canon" in calm.stderr
