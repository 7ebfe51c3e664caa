from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from canon.cli import main
from canon.core.artifact import Artifact
from canon.errors import InputError
from canon.project.suite import read_suite, select_artifacts

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_a_jsonl_suite_reads_like_the_same_yaml_suite(write):
    write("responses/r.json", '{"refund": 1}')
    yaml_suite = write(
        "s.yaml",
        "artifacts:\n  - id: a\n    text: One.\n    response: responses/r.json\n"
        "  - Two, as plain text.\n  - {id: c, text: Three., response: {inline: true}}\n",
    )
    jsonl = write(
        "s.jsonl",
        '{"id": "a", "text": "One.", "response": "responses/r.json"}\n'
        "\n"
        '"Two, as plain text."\n'
        '{"id": "c", "text": "Three.", "response": {"inline": true}}\n',
    )
    assert read_suite(jsonl) == read_suite(yaml_suite)
    assert read_suite(jsonl)[0].response == {"refund": 1}


def test_a_csv_suite_reads_like_the_same_yaml_suite(write, tmp_path):
    write("responses/r.json", '{"refund": 1}')
    yaml_suite = write(
        "s.yaml",
        "artifacts:\n  - id: a\n    text: One.\n    response: responses/r.json\n"
        "  - text: Two, with a comma.\n  - {id: c, text: Three., response: {inline: true}}\n",
    )
    csv_suite = write(
        "s.csv",
        "\ufeffid,text,response\n"
        "a,One.,responses/r.json\n"
        ',"Two, with a comma.",\n'
        'c,Three.,"{""inline"": true}"\n',
    )
    assert read_suite(csv_suite) == read_suite(yaml_suite)
    trace = write("t.csv", "text,trace\nHello.,traces/x.json\n")
    assert read_suite(trace) == (Artifact("Hello.", trace=tmp_path / "traces/x.json"),)


@pytest.mark.parametrize(
    ("name", "text", "fragment"),
    [
        ("s.jsonl", '{"text": "a"}\n{"text": \n', "line 2 is not valid JSON"),
        ("s.jsonl", '{"text": "a", "text": "b"}\n', "duplicate key 'text'"),
        ("s.jsonl", '{"text": NaN}\n', "NaN is not valid JSON"),
        ("s.jsonl", "\n\n", "has no artifacts"),
        ("s.jsonl", '{"txt": "a"}\n', "artifact 1: unknown key(s) 'txt'"),
        ("s.jsonl", '{"text": "a"}\n{"text": "a"}\n', "artifact 2 has the same key"),
        ("s.csv", "", "needs a header row"),
        ("s.csv", "text\n", "a header row and no data rows"),
        ("s.csv", "id,body\na,b\n", "include 'text', got 'id', 'body'"),
        ("s.csv", "text,text\na,b\n", "at most once"),
        ("s.csv", "id,text\na,b,c\n", "line 2 has more cells than the header"),
        ("s.csv", 'text\n"open\n', "not valid CSV"),
        ("s.csv", "id,text\na,\n", "artifact 1: 'text' must be non-empty text"),
        ("s.csv", "text,response\nx,{bad\n", "line 2: 'response' opens with { so it is inline"),
    ],
)
def test_a_broken_jsonl_or_csv_suite_is_one_clear_error_naming_the_file(
    write, name, text, fragment
):
    path = write(name, text)
    with pytest.raises(InputError) as info:
        read_suite(path)
    message = str(info.value)
    assert message.startswith(str(path)) and fragment in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("s.yaml", "artifacts:\n  - text: a\n    response: dup.jsn\n"),
        ("s.jsonl", '{"text": "a", "response": "dup.jsn"}\n'),
        ("s.csv", "text,response\na,dup.jsn\n"),
    ],
)
def test_a_response_path_typo_is_a_missing_file_never_inline_json(write, tmp_path, name, text):
    write("dup.json", '{"refund": 1}')  # the file the typo meant
    path = write(name, text)
    with pytest.raises(InputError) as info:
        read_suite(path)
    assert str(info.value) == (
        f"{path}: artifact 1: response file not found at {tmp_path / 'dup.jsn'}"
    )


def test_a_response_string_names_a_json_file_of_any_name_and_csv_inline_json_opens_a_structure(
    write, tmp_path
):
    write("responses/r.txt", '{"refund": 1}')
    yaml_suite = write("s.yaml", "artifacts:\n  - {text: a, response: responses/r.txt}\n")
    assert read_suite(yaml_suite)[0].response == {"refund": 1}
    csv_suite = write("s.csv", 'text,response\na,responses/r.txt\nb," [1, 2]"\n')
    assert [a.response for a in read_suite(csv_suite)] == [{"refund": 1}, [1, 2]]
    blank = write("b.yaml", "artifacts:\n  - {text: a, response: ' '}\n")
    with pytest.raises(InputError, match="artifact 1: 'response' must be the path of a JSON"):
        read_suite(blank)


def test_canon_score_refuses_a_response_path_typo_with_exit_2(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES, project)
    suite = project / "suite.yaml"
    suite.write_text(suite.read_text().replace("duplicate-charge.json", "duplicate-charge.jsn"))
    cwd = os.getcwd()
    os.chdir(project)
    try:
        result = CliRunner().invoke(main, ["score", "--quiet"], catch_exceptions=False)
    finally:
        os.chdir(cwd)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"canon: error: {suite}: artifact 1: response file not found")
    assert result.stderr.rstrip().endswith("responses/duplicate-charge.jsn")


ARTIFACTS = tuple(Artifact(f"text {k}", id=k) for k in ("refund-1", "refund-2", "roaming", "x[1]"))


@pytest.mark.parametrize(
    ("patterns", "limit", "keys"),
    [
        ((), None, ["refund-1", "refund-2", "roaming", "x[1]"]),
        (("roaming",), None, ["roaming"]),
        (("refund-*",), None, ["refund-1", "refund-2"]),
        (("roaming", "refund-2"), None, ["refund-2", "roaming"]),  # suite order, not yours
        (("refund-*", "refund-1"), None, ["refund-1", "refund-2"]),  # each artifact once
        (("x[1]",), None, ["x[1]"]),  # an exact key wins over its reading as a glob
        ((), 2, ["refund-1", "refund-2"]),
        (("r*",), 1, ["refund-1"]),
    ],
)
def test_select_picks_keys_or_globs_in_suite_order_then_limit_cuts(patterns, limit, keys):
    assert [a.key for a in select_artifacts(ARTIFACTS, patterns, limit)] == keys


def test_a_select_pattern_matching_nothing_is_an_error_listing_the_keys():
    with pytest.raises(InputError) as info:
        select_artifacts(ARTIFACTS, ("roaming", "refnud-*"), source="suite.yaml")
    assert str(info.value) == (
        "suite.yaml: --select 'refnud-*' matches no artifact; its keys are "
        "refund-1, refund-2, roaming, x[1]"
    )
    with pytest.raises(InputError, match="--limit must be a whole number >= 1"):
        select_artifacts(ARTIFACTS, (), 0)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    target = tmp_path / "project"
    shutil.copytree(EXAMPLES, target)
    return target


def _canon(project: Path, *args: str):
    cwd = os.getcwd()
    os.chdir(project)
    try:
        return CliRunner().invoke(main, list(args))
    finally:
        os.chdir(cwd)


def test_score_runs_only_the_selected_artifacts(project):
    result = _canon(project, "score", "--quiet", "--select", "large-*", "--format", "json")
    assert result.exit_code == 0, result.output
    assert [a["key"] for a in json.loads(result.stdout)["artifacts"]] == ["large-refund"]
    limited = _canon(project, "score", "--quiet", "--limit", "2")
    assert limited.exit_code == 0 and "2 canon, 0 non-canon" in limited.stdout


def test_check_runs_the_selection_against_the_baseline(project):
    assert _canon(project, "accept", "--quiet").exit_code == 0
    result = _canon(project, "check", "--quiet", "--select", "roaming-question")
    assert result.exit_code == 0, result.output
    # the artifacts left out of the selection are not "missing" from the run
    assert "1 artifact(s) checked: 1 matched, 0 new, 0 recorded but missing" in result.stdout
    # ...but the report says how much of the baseline this partial check did not look at
    assert "2 baseline artifact(s) left out by --select/--limit were not compared" in result.stdout
    as_json = _canon(project, "check", "--quiet", "--limit", "1", "--format", "json")
    assert as_json.exit_code == 0, as_json.output
    notes = json.loads(as_json.stdout)["notes"]
    assert any("2 baseline artifact(s) left out" in note for note in notes)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--select", "nope"), "--select 'nope' matches no artifact"),
        (("--limit", "0"), "Invalid value for '--limit'"),
    ],
)
def test_a_bad_selection_exits_2_before_any_judge_call(project, args, fragment):
    result = _canon(project, "score", "--quiet", *args)
    assert result.exit_code == 2
    assert fragment in result.stderr


def test_the_example_suite_scores_the_same_from_jsonl(project):
    lines = [
        json.dumps(
            {"id": "large-refund", "text": a.text, "response": "responses/large-refund.json"}
        )
        for a in read_suite(project / "suite.yaml")
        if a.key == "large-refund"
    ]
    (project / "more.jsonl").write_text("\n".join(lines) + "\n")
    result = _canon(project, "score", "--quiet", "--suite", "more.jsonl")
    assert result.exit_code == 0, result.output
    assert "canon     1.000  large-refund" in result.stdout
