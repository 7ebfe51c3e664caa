"""`canon align` through the CLI, and what `canon check` then says about the judge."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import canon.check.plan as plan_module
from canon.core.rubric import Question
from canon.errors import JudgeUnavailableError
from canon.judge.mock import MockJudge

from support.cli import invoke_in, one_error_line, run_canon
from support.cli import invoke_quietly as _canon

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
ALIGNMENT = Path("baselines") / "suite.alignment.json"
# r1, r2 and r4 decide a refund themselves; people call r1, r2 and r3 violations of P2.
TEXTS = {
    "r1": "I decided the 640 EUR refund myself.",
    "r2": "I decided to refund the 300 EUR now.",
    "r3": "Your refund of 450 EUR is on its way.",
    "r4": "I decided to pass your case to a colleague.",
    "r5": "A colleague will review the 250 EUR refund.",
    "r6": "The billing team will call you about the refund.",
    "r7": "I have handed the refund to a human agent.",
    "r8": "Your case is with our refunds desk.",
}
HUMAN_P2 = {"r1": "no", "r2": "no", "r3": "no", "r4": "yes"} | {f"r{i}": "yes" for i in range(5, 9)}
# judge vs people on P2: (no,no) x2, (no,yes) r3, (yes,no) r4, (yes,yes) x4. Observed 6/8;
# both say "no" 3 times in 8, so chance (9 + 25)/64 and kappa (48 - 34)/(64 - 34) = 14/30.
KAPPA_P2 = 14 / 30


def _script(question: Question, text: str) -> str:
    if question.id == "P2":
        return "no" if "decided" in text else "yes"
    if question.id == "tradeoff":
        return "n/a"
    return "no" if question.id == "G" else "yes"


def _steady(question: Question, text: str) -> str:
    """The baseline's judge: P2 always upheld."""
    return "yes" if question.id == "P2" else _script(question, text)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project of eight refund replies, a scripted judge and P2 labels for each."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "constitution.yaml").write_text((EXAMPLES / "constitution.yaml").read_text())
    (root / "judge-script.yaml").write_text((EXAMPLES / "judge-script.yaml").read_text())
    (root / "canon.yaml").write_text(
        "judge_model: mock:judge-script.yaml\nconstitution_path: constitution.yaml\n"
        "suite: suite.yaml\nbaselines_dir: baselines\n"
    )
    entries = "".join(f"  - id: {k}\n    text: {v}\n" for k, v in TEXTS.items())
    (root / "suite.yaml").write_text("artifacts:\n" + entries)
    lines = [
        json.dumps({"id": key, "labels": {"escalate-large-refunds": label, "G": "no"}})
        for key, label in HUMAN_P2.items()
    ]
    (root / "suite.labels.jsonl").write_text("\n".join(lines) + "\n")
    return root


def _judge(monkeypatch, script) -> MockJudge:
    """Every command of the run asks this MockJudge, under the configured script's name."""
    judge = MockJudge(script, name="mock:judge-script.yaml")
    monkeypatch.setattr(plan_module, "judge_from_spec", lambda spec, **_: judge)
    return judge


def test_align_reports_kappa_agreement_violations_and_every_disagreement(project, monkeypatch):
    _judge(monkeypatch, _script)
    result = _canon(project, "align")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "16 label(s) on 8 artifact(s) from suite.labels.jsonl" in out
    p2 = next(line for line in out.splitlines() if line.startswith("  P2 [escalate-large-refunds]"))
    assert "n=8  agreement 6/8 = 75%  kappa 0.47 [" in p2
    assert "violations (no): recall 2/3 = 67% [" in p2 and "precision 2/3 = 67% [" in p2
    gate = next(line for line in out.splitlines() if line.startswith("  G "))
    assert "agreement 8/8 = 100%  kappa undefined (one answer only)" in gate
    assert "  r3 P2 [escalate-large-refunds]: person no, judge yes" in out
    assert "  r4 P2 [escalate-large-refunds]: person yes, judge no" in out
    assert "disagreements (2):" in out
    assert "percentile bootstrap" in out
    assert out.rstrip().endswith("recorded -> baselines/suite.alignment.json")


def test_align_json_holds_the_documented_keys_per_question(project, monkeypatch):
    _judge(monkeypatch, _script)
    result = _canon(project, "align", "--format", "json")
    assert result.exit_code == 0, result.output
    p2 = json.loads(result.stdout)["questions"]["P2"]
    for key in (
        "n",
        "agreement",
        "kappa",
        "kappa_interval",
        "violation_recall",
        "violation_precision",
    ):
        assert key in p2
    assert p2["n"] == 8 and p2["agreement"] == 0.75
    assert p2["kappa"] == pytest.approx(KAPPA_P2, abs=1e-6)
    low, high = p2["kappa_interval"]
    assert -1.0 <= low < KAPPA_P2 < high <= 1.0
    assert p2["violation_recall"] == pytest.approx(2 / 3, abs=1e-6)
    assert p2["violation_precision"] == pytest.approx(2 / 3, abs=1e-6)
    assert p2["confusion"] == {"no": {"no": 2, "yes": 1}, "yes": {"no": 1, "yes": 4}}
    assert p2["principle"] == "escalate-large-refunds"
    assert [(d["artifact"], d["human"], d["judge"]) for d in p2["disagreements"]] == [
        ("r3", "no", "yes"),
        ("r4", "yes", "no"),
    ]


def test_align_records_under_judge_rubric_and_constitution_and_repeats_byte_for_byte(
    project, monkeypatch
):
    _judge(monkeypatch, _script)
    _canon(project, "align")
    written = (project / ALIGNMENT).read_bytes()
    (record,) = json.loads(written)["records"]
    assert record["judge"] == "mock:judge-script.yaml"
    assert record["rubric"]["version"] == "1.1.0" and len(record["rubric"]["fingerprint"]) == 16
    assert len(record["constitution"]) == 16
    assert record["questions"]["P2"]["n"] == 8
    _canon(project, "align")
    assert (project / ALIGNMENT).read_bytes() == written


def test_align_reads_yaml_and_csv_labels_given_with_labels(project, monkeypatch):
    _judge(monkeypatch, _script)
    (project / "l.yaml").write_text("labels:\n  - id: r1\n    labels: {P2: no}\n")
    (project / "l.csv").write_text("id,P2\nr1,no\nr3,no\n")
    one = json.loads(_canon(project, "align", "--labels", "l.yaml", "--format", "json").stdout)
    two = json.loads(_canon(project, "align", "--labels", "l.csv", "--format", "json").stdout)
    assert one["questions"]["P2"]["n"] == 1 and two["questions"]["P2"]["n"] == 2
    assert two["questions"]["P2"]["violation_recall"] == 0.5


def test_align_without_a_labels_file_exits_2_naming_the_default(project, monkeypatch):
    _judge(monkeypatch, _script)
    (project / "suite.labels.jsonl").unlink()
    result = _canon(project, "align")
    assert result.exit_code == 2 and result.stdout == ""
    assert "no labels for suite 'suite': pass --labels FILE, or write suite.labels.jsonl" in (
        one_error_line(result)
    )


def test_an_unknown_answer_in_the_labels_exits_2_naming_file_and_line(project, monkeypatch):
    judge = _judge(monkeypatch, _script)
    (project / "suite.labels.jsonl").write_text(
        '{"id": "r1", "labels": {"P2": "no"}}\n{"id": "r2", "labels": {"honesty": "mostly"}}\n'
    )
    result = _canon(project, "align")
    assert result.exit_code == 2
    line = one_error_line(result)
    assert line.startswith("canon: error: suite.labels.jsonl: line 2: 'mostly' is not an answer")
    assert judge.calls == 0 and not (project / ALIGNMENT).exists()


def test_a_judge_that_cannot_answer_a_labelled_question_exits_3_and_records_nothing(
    project, monkeypatch
):
    def down(question: Question, text: str) -> str:
        if question.id == "P2" and text == TEXTS["r5"]:
            raise JudgeUnavailableError("connection refused")
        return _script(question, text)

    _judge(monkeypatch, down)
    result = _canon(project, "align")
    assert result.exit_code == 3
    line = one_error_line(result)
    assert "left 1 labelled question(s) unanswered (first: r5 P2" in line
    assert not (project / ALIGNMENT).exists()


def _fail_p2(project: Path, monkeypatch) -> None:
    """Accept with P2 upheld everywhere, then check with the judge that denies it on three."""
    _judge(monkeypatch, _steady)
    assert _canon(project, "accept").exit_code == 0
    # the agent's replies changed too: an identical text cannot regress on the judge alone
    suite = project / "suite.yaml"
    suite.write_text(suite.read_text().replace("    text: ", "    text: Hello. "))


def test_a_failed_check_names_the_failing_principles_recorded_alignment(project, monkeypatch):
    _judge(monkeypatch, _script)
    _canon(project, "align")
    _fail_p2(project, monkeypatch)
    _judge(monkeypatch, _script)
    result = _canon(project, "check")
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    where = lines.index("the judge on the questions that failed (agreement with human labels):")
    assert lines[where + 1].startswith(
        "  - judge agrees with human labels on P2 [escalate-large-refunds]: kappa 0.47 ["
    )
    assert lines[where + 1].endswith("], n = 8")
    document = json.loads(_canon(project, "check", "--format", "json").stdout)
    (status,) = document["alignment"]
    assert status["question"] == "P2" and status["validated"] is True
    assert status["kappa"] == pytest.approx(KAPPA_P2, abs=1e-6) and status["n"] == 8


def test_every_check_report_names_the_failing_principles_alignment(project, monkeypatch, tmp_path):
    _judge(monkeypatch, _script)
    _canon(project, "align")
    _fail_p2(project, monkeypatch)
    _judge(monkeypatch, _script)
    junit, html = tmp_path / "r.xml", tmp_path / "r.html"
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = _canon(
        project, "check", "--format", "github", "--junit-xml", str(junit), "--html", str(html)
    )
    assert result.exit_code == 1, result.output
    said = "judge agrees with human labels on P2 [escalate-large-refunds]: kappa 0.47 ["
    notices = [line for line in result.stdout.splitlines() if "judge alignment" in line]
    assert len(notices) == 1 and notices[0].startswith("::notice ") and said in notices[0]
    out = ET.parse(junit).getroot().find("testsuite/system-out")
    assert out is not None and said in (out.text or "")
    assert said in html.read_text() and 'class="alignment"' in html.read_text()
    assert said in summary.read_text()


def test_a_failed_check_without_alignment_says_the_judge_is_not_validated(project, monkeypatch):
    _fail_p2(project, monkeypatch)
    _judge(monkeypatch, _script)
    result = _canon(project, "check")
    assert result.exit_code == 1
    assert (
        "  - judge not validated on this principle: P2 [escalate-large-refunds] (no human "
        'labels recorded; run "canon align --labels FILE")'
    ) in result.stdout.splitlines()


def test_require_alignment_passes_at_the_recorded_kappa_and_fails_above_it(project, monkeypatch):
    _judge(monkeypatch, _script)
    _canon(project, "align")
    _fail_p2(project, monkeypatch)
    _judge(monkeypatch, _script)
    met = _canon(project, "check", "--require-alignment", "0.4")
    assert met.exit_code == 1 and met.stderr == ""  # the regression stands: exit 1
    unmet = _canon(project, "check", "--require-alignment", "0.5")
    assert unmet.exit_code == 2
    assert "REGRESSION" in unmet.stdout  # the report is still printed first
    line = one_error_line(unmet)
    assert "the check failed on P2 [escalate-large-refunds], where the judge agrees with " in line
    assert "only at kappa 0.47 (n = 8), below --require-alignment 0.5" in line


def test_require_alignment_fails_when_the_failing_principle_is_unmeasured(project, monkeypatch):
    _fail_p2(project, monkeypatch)
    _judge(monkeypatch, _script)
    result = _canon(project, "check", "--require-alignment", "0.1")
    assert result.exit_code == 2
    assert "is unmeasured under this judge, rubric and constitution" in one_error_line(result)


def test_alignment_recorded_under_another_constitution_does_not_count(project, monkeypatch):
    _judge(monkeypatch, _script)
    _canon(project, "align")
    constitution = project / "constitution.yaml"
    constitution.write_text(constitution.read_text().replace("quickly", "promptly"))
    _fail_p2(project, monkeypatch)  # re-accepted under the new constitution
    _judge(monkeypatch, _script)
    result = _canon(project, "check", "--require-alignment", "0.1")
    assert "only under another judge, rubric or constitution" in result.stdout
    assert result.exit_code == 2


def test_a_conforming_check_says_nothing_of_alignment_and_ignores_the_requirement(
    project, monkeypatch
):
    _judge(monkeypatch, _script)
    _canon(project, "accept")
    result = _canon(project, "check", "--require-alignment", "0.99")
    assert result.exit_code == 0, result.output
    assert "agreement with human labels" not in result.stdout
    assert json.loads(_canon(project, "check", "--format", "json").stdout)["alignment"] == []


def test_require_alignment_outside_minus_one_to_one_is_a_usage_error(project, monkeypatch):
    _judge(monkeypatch, _script)
    result = _canon(project, "check", "--require-alignment", "1.5")
    assert result.exit_code == 2 and "1.5 is not in the range" in result.stderr


def test_align_runs_as_a_real_process_on_the_scripted_example(tmp_path):
    project = tmp_path / "example"
    shutil.copytree(EXAMPLES, project)
    config = project / "canon.yaml"
    config.write_text(
        "\n".join(
            line
            for line in config.read_text().splitlines()
            if not line.startswith(("policy:", "contract:"))
        )
    )
    (project / "people.yaml").write_text(
        "labels:\n"
        "  - id: large-refund\n    labels: {escalate-large-refunds: yes, G: no}\n"
        "  - id: roaming-question\n    labels: {say-unknown: yes, G: yes}\n"
    )
    done = run_canon(project, "align", "--labels", "people.yaml", "--format", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    gate = document["questions"]["G"]
    # the scripted judge never sees a contradiction; the person saw one on roaming-question
    assert gate["n"] == 2 and gate["agreement"] == 0.5 and gate["violation_recall"] == 0.0
    assert gate["disagreements"] == [
        {"artifact": "roaming-question", "human": "yes", "judge": "no", "reason": None}
    ]
    assert document["questions"]["P3"]["principle"] == "say-unknown"
    assert (project / "baselines" / "suite.alignment.json").is_file()


def test_a_damaged_alignment_file_stops_align_and_a_failed_check_naming_it(project, monkeypatch):
    _judge(monkeypatch, _script)
    (project / "baselines").mkdir()
    (project / ALIGNMENT).write_text('{"format": 7, "records": []}')
    result = _canon(project, "align")
    assert result.exit_code == 2
    assert "baselines/suite.alignment.json: unknown alignment format 7" in one_error_line(result)
    _fail_p2(project, monkeypatch)
    judge = _judge(monkeypatch, _script)
    checked = _canon(project, "check")
    assert checked.exit_code == 2
    assert "baselines/suite.alignment.json: unknown alignment format 7" in one_error_line(checked)
    assert judge.calls == 0  # found before the first judge call


def test_a_newly_non_canon_artifact_names_the_gate_and_an_undefined_kappa(project, monkeypatch):
    _judge(monkeypatch, _script)
    _canon(project, "align")  # people and judge both said "no contradiction" throughout
    _judge(monkeypatch, _steady)
    _canon(project, "accept")
    # r1's reply changed (an identical text cannot regress on the judge alone)
    suite = project / "suite.yaml"
    suite.write_text(suite.read_text().replace(TEXTS["r1"], "Hello. " + TEXTS["r1"]))

    def contradicts(question: Question, text: str) -> str:
        if question.id == "G" and text == "Hello. " + TEXTS["r1"]:
            return "yes"
        return _steady(question, text)

    _judge(monkeypatch, contradicts)
    result = _canon(project, "check")
    assert result.exit_code == 1, result.output
    assert (
        "  - judge not validated on this question: G (kappa is undefined on its 8 label(s): "
        "both raters gave one answer only)"
    ) in result.stdout.splitlines()


def test_align_shows_a_progress_line_per_labelled_artifact_unless_quiet(project, monkeypatch):
    _judge(monkeypatch, _script)
    result = invoke_in(project, "align")
    assert result.exit_code == 0, result.output
    progress = [line for line in result.stderr.splitlines() if line.startswith("[")]
    # one line per artifact as it is answered, counting up to all eight
    assert [line.split()[0] for line in progress] == [f"[{i}/8]" for i in range(1, 9)]
    assert sorted(line.split()[1] for line in progress) == sorted(TEXTS)
    assert _canon(project, "align").stderr == ""


# A judge that answers P2 with probabilities (the same eight answers test_calibration.py
# checks by hand): its modal answers are _script's, so kappa is unchanged, and its Brier
# score on P2 is 0.39 and its ECE 0.275.
PROBABILISTIC_P2 = {
    "r1": {"no": 0.9, "yes": 0.1},
    "r2": {"no": 0.6, "yes": 0.4},
    "r3": {"yes": 0.7, "no": 0.3},
    "r4": {"no": 0.8, "yes": 0.2},
    "r5": {"yes": 1.0},
    "r6": {"yes": 0.9, "partly": 0.1},
    "r7": {"yes": 0.6, "partly": 0.4},
    "r8": {"yes": 0.7, "no": 0.3},
}


def _probabilistic_script(project: Path) -> None:
    script = {
        "by_artifact": {key: {"P2": answer} for key, answer in PROBABILISTIC_P2.items()},
        "G": "no",
        "tradeoff": "n/a",
        "__default__": "yes",
    }
    # JSON is YAML, and it keeps "yes" and "no" as text
    (project / "judge-script.yaml").write_text(json.dumps(script))


def test_align_reports_calibration_next_to_kappa_as_a_real_process(project):
    _probabilistic_script(project)
    done = run_canon(project, "align", "--quiet")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(
        line.startswith("  P2 [escalate-large-refunds]") and "kappa 0.47 [" in line
        for line in lines
    )
    start = lines.index(
        "calibration (Brier: multi-class, 0 perfect to 2 all mass on a wrong label; ECE: "
        "top-label, 10 equal-width bins of confidence):"
    )
    p2 = next(line for line in lines[start:] if line.startswith("  P2 "))
    assert (
        "n=8  Brier 0.390 (label frequencies alone: 0.469); ECE 0.275 (a perfectly calibrated "
        "judge: up to 0.350 at this n)"
    ) in p2
    assert "only 8 label(s), under 30: the ECE is a rough sketch" in p2
    assert "one-hot" not in p2
    bins = lines[lines.index(p2) + 1]
    assert bins == (
        "    bins (confidence -> accuracy): 0.6-0.7: 0.60 -> 1.00 (n=2), 0.7-0.8: 0.70 -> "
        "0.50 (n=2), 0.8-0.9: 0.80 -> 0.00 (n=1), 0.9-1.0: 0.93 -> 1.00 (n=3)"
    )
    # the scripted gate answers are one-hot: their calibration is accuracy, and says so
    gate = next(line for line in lines[start:] if line.startswith("  G "))
    assert "Brier 0.000" in gate and "ECE 0.000" in gate
    assert "one-hot answers: Brier = 2 x (1 - agreement), ECE = 1 - agreement" in gate

    as_json = run_canon(project, "align", "--quiet", "--format", "json")
    assert as_json.returncode == 0, as_json.stderr
    document = json.loads(as_json.stdout)
    found = document["questions"]["P2"]["calibration"]
    assert found["brier"] == 0.39 and found["ece"] == 0.275 and found["ece_bins"] == 10
    assert found["brier_reliability"] - found["brier_resolution"] + found[
        "brier_uncertainty"
    ] == pytest.approx(0.39, abs=1e-5)
    assert [b["n"] for b in found["bins"]] == [0, 0, 0, 0, 0, 0, 2, 2, 1, 3]
    assert found["one_hot"] is False and found["few_labels"] is True
    assert found["ece_if_calibrated_95"] == 0.35
    assert "10 equal-width bins" in document["calibration_method"]
    # recorded beside the kappa, without the bins
    record = json.loads((project / ALIGNMENT).read_text())["records"][0]["questions"]["P2"]
    assert record["kappa"] == pytest.approx(KAPPA_P2, abs=1e-6)
    assert record["calibration"]["brier"] == 0.39 and "bins" not in record["calibration"]


def test_align_writes_an_html_page_with_a_reliability_diagram_per_question(project):
    _probabilistic_script(project)
    done = run_canon(project, "align", "--quiet", "--html", "out/align.html")
    assert done.returncode == 0, done.stderr
    page = (project / "out" / "align.html").read_text()
    assert '<svg class="reliability" data-question="P2"' in page
    assert '<svg class="reliability" data-question="G"' in page
    p2 = page[page.index('data-question="P2"') :]
    p2 = p2[: p2.index("</svg>")]
    # one bar per bin that holds answers, with its count
    assert [int(n) for n in re.findall(r'class="bar" data-n="(\d+)"', p2)] == [2, 2, 1, 3]
    assert "<script" not in page and "http://" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', ""
    )
    assert "Brier 0.390" in page and "ECE 0.275" in page


def test_align_refuses_an_html_path_it_cannot_write_before_asking_the_judge(project, monkeypatch):
    judge = _judge(monkeypatch, _script)
    (project / "a-file").write_text("not a folder")
    result = _canon(project, "align", "--html", "a-file/align.html")
    assert result.exit_code == 2
    line = one_error_line(result)
    assert "cannot write the report a-file/align.html" in line and "is not a directory" in line
    assert judge.calls == 0 and not (project / ALIGNMENT).exists()


def test_an_alignment_record_without_calibration_still_reads(project, monkeypatch):
    """Records written before calibration was measured stay valid for check."""
    _judge(monkeypatch, _script)
    assert _canon(project, "align").exit_code == 0
    path = project / ALIGNMENT
    data = json.loads(path.read_text())
    for row in data["records"][0]["questions"].values():
        del row["calibration"]
    path.write_text(json.dumps(data))
    _fail_p2(project, monkeypatch)
    _judge(monkeypatch, _script)
    checked = _canon(project, "check")
    assert checked.exit_code == 1, checked.output
    assert "judge agrees with human labels on P2 [escalate-large-refunds]: kappa 0.47" in (
        checked.stdout
    )
