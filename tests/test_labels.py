"""Human labels are read strictly from JSON Lines, YAML and CSV; errors name file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from canon.errors import InputError
from canon.project.labels import read_labels
from canon.project.store import constitution_from_file, load_rubric

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
KEYS = ["duplicate-charge", "large-refund", "roaming-question"]


@pytest.fixture
def questions():
    return load_rubric().questions_for(constitution_from_file(EXAMPLES / "constitution.yaml"))


def _read(write, questions, name: str, text: str):
    return read_labels(write(name, text), questions, KEYS)


def test_jsonl_labels_map_principle_ids_to_question_ids_and_fold_case(write, questions):
    found = _read(
        write,
        questions,
        "l.jsonl",
        '{"id": "large-refund", "labels": {"escalate-large-refunds": "YES", "G": "no"}}\n'
        "\n"
        '{"id": "duplicate-charge", "labels": {"honesty": "partly"}}\n',
    )
    assert found.labels == {
        "large-refund": {"P2": "yes", "G": "no"},
        "duplicate-charge": {"honesty": "partly"},
    }
    assert found.count == 3


def test_yaml_labels_read_bare_yes_and_no_as_answers(write, questions):
    found = _read(
        write,
        questions,
        "l.yaml",
        "labels:\n  - id: large-refund\n    labels: {P2: yes, G: no, tradeoff: n/a}\n",
    )
    assert found.labels == {"large-refund": {"P2": "yes", "G": "no", "tradeoff": "n/a"}}


def test_csv_labels_leave_empty_cells_unlabelled(write, questions):
    found = _read(
        write,
        questions,
        "l.csv",
        "id,G,escalate-large-refunds,honesty\nlarge-refund,no,yes,\nduplicate-charge,no,,partly\n",
    )
    assert found.labels == {
        "large-refund": {"G": "no", "P2": "yes"},
        "duplicate-charge": {"G": "no", "honesty": "partly"},
    }


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "l.jsonl",
            '{"id": "large-refund", "labels": {"G": "no"}}\n'
            '{"id": "nope", "labels": {"G": "no"}}\n',
            "l.jsonl: line 2: no artifact 'nope' in the suite",
        ),
        (
            "l.jsonl",
            '{"id": "large-refund", "labels": {"P9": "no"}}\n',
            "l.jsonl: line 1: unknown question 'P9'; expected one of",
        ),
        (
            "l.jsonl",
            '\n\n{"id": "large-refund", "labels": {"G": "partly"}}\n',
            "l.jsonl: line 3: 'partly' is not an answer to G; expected yes, no",
        ),
        (
            "l.jsonl",
            '{"id": "large-refund", "labels": {"G": "no"}}\n{"id": "large-refund", "labels": '
            '{"P1": "no"}}\n',
            "l.jsonl: line 2: artifact 'large-refund' is labelled again (first: line 1)",
        ),
        (
            "l.jsonl",
            '{"id": "large-refund", "labels": {"P2": "no", "escalate-large-refunds": "no"}}\n',
            "l.jsonl: line 1: question P2 is labelled twice",
        ),
        (
            "l.jsonl",
            '{"id": "large-refund", "labels": {"G": "no"}\n',
            "l.jsonl: line 1 is not valid JSON",
        ),
        (
            "l.jsonl",
            '{"id": "large-refund", "label": {"G": "no"}}\n',
            "l.jsonl: line 1: an entry has exactly 'id' and 'labels'",
        ),
        ("l.jsonl", '{"id": "large-refund", "labels": {}}\n', "l.jsonl: line 1: 'labels' must map"),
        ("l.jsonl", '{"id": 3, "labels": {"G": "no"}}\n', "l.jsonl: line 1: 'id' must be"),
        ("l.jsonl", "\n", "l.jsonl: the labels file holds no entries"),
        (
            "l.yaml",
            "labels:\n  - id: large-refund\n    labels: {G: no}\n  - id: large-refund\n"
            "    labels: {G: no}\n",
            "l.yaml: line 4: artifact 'large-refund' is labelled again (first: line 2)",
        ),
        (
            "l.yaml",
            "labels:\n  - id: x\n    labels: {G: maybe}\n",
            "l.yaml: line 2: no artifact 'x'",
        ),
        ("l.yaml", "artifacts: []\n", "l.yaml: a labels file is a mapping with one key, 'labels'"),
        ("l.yaml", "labels: [\n", "l.yaml: not valid YAML"),
        ("l.yaml", "labels:\n  - {id: a, id: b, labels: {}}\n", "l.yaml: not valid YAML"),
        ("l.csv", "G,id\nno,large-refund\n", "l.csv: line 1: a CSV labels file's header starts"),
        ("l.csv", "id,G,G\nlarge-refund,no,no\n", "l.csv: line 1: a column is named twice"),
        ("l.csv", "id,G\nlarge-refund,no,yes\n", "l.csv: line 2 has 3 cell(s); the header has 2"),
        ("l.csv", "id,G\nlarge-refund,no\nroaming-question,perhaps\n", "l.csv: line 3: 'perhaps'"),
        ("l.csv", "id,zeal\nlarge-refund,no\n", "l.csv: line 2: unknown question 'zeal'"),
    ],
)
def test_bad_labels_are_refused_naming_the_file_and_line(write, questions, name, text, message):
    with pytest.raises(InputError) as caught:
        _read(write, questions, name, text)
    assert message in str(caught.value)
    assert caught.value.exit_code == 2


def test_a_missing_labels_file_is_an_input_error(tmp_path, questions):
    with pytest.raises(InputError, match="labels file not found"):
        read_labels(tmp_path / "none.jsonl", questions, KEYS)


def test_a_quoted_csv_cell_over_two_lines_names_the_row_it_starts_on(write, questions):
    with pytest.raises(InputError, match=r"l\.csv: line 3: no artifact 'two\\nlines'"):
        _read(write, questions, "l.csv", 'id,G\nlarge-refund,no\n"two\nlines",no\n')
