from __future__ import annotations

import copy

import pytest

from canon import CoherenceMetric, load_rubric
from canon.core.rubric import fingerprint_of, rubric_from_mapping
from canon.errors import RubricError, RubricOverrideError
from canon.judge.mock import MockJudge
from canon.project.store import RUBRIC_FILE, parse_yaml

# Every released rubric version and the fingerprint of its content. A released file is
# never edited: changing the questions means a new file with a new version (and an entry here).
RELEASED = {"1.0.0": "4603ef5595b118a0", "1.1.0": "ed230a1f5b18ce35"}


def test_packaged_rubric_matches_its_released_fingerprint():
    rubric = load_rubric()
    assert rubric.id == "cdt"
    assert RELEASED.get(rubric.version) == rubric.fingerprint, (
        "the rubric file changed without a version bump: copy it to a new version instead"
    )
    assert f"cdt-{rubric.version}.yaml" == RUBRIC_FILE


def test_rubric_has_the_required_facets_and_one_gate_without_na():
    rubric = load_rubric()
    ids = [q.id for q in rubric.fixed]
    assert ids[:5] == ["mission", "tradeoff", "scope", "consistency", "honesty"]
    assert rubric.gate.id == "G"
    assert not rubric.gate.allows_na
    assert [c.score for c in rubric.gate.choices if c.label == "yes"] == [0.0]
    for question in rubric.fixed:
        if question.kind == "facet":
            assert question.allows_na
        for choice in question.choices:
            assert choice.score is None or 0.0 <= choice.score <= 1.0


def test_one_question_is_derived_per_principle_with_its_subject(constitution):
    questions = load_rubric().questions_for(constitution)
    derived = [q for q in questions if q.kind == "principle"]
    assert [q.id for q in derived] == ["P1", "P2", "P3", "P4"]
    assert [q.subject for q in derived] == [p.text for p in constitution.principles]
    assert all(q.subject in q.text for q in derived)


def test_fingerprint_ignores_formatting_but_not_content():
    data = {"b": 1, "a": [1, 2]}
    assert fingerprint_of(data) == fingerprint_of({"a": [1, 2], "b": 1})
    assert fingerprint_of(data) != fingerprint_of({"a": [2, 1], "b": 1})


def _rubric_data():
    from canon.project import store

    text, source = store._rubric_text()
    return parse_yaml(text, source)


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda d: d.update(version="1.0"), "version must look like"),
        (lambda d: d["questions"].pop(5), "exactly one gate"),
        (lambda d: d["questions"][0].update(kind="other"), "kind must be"),
        (lambda d: d["questions"][0].update(choices=[{"label": "x", "score": 2}] * 2), "[0, 1]"),
        (lambda d: d["principle_question"].update(text="no placeholder"), "{principle}"),
        (lambda d: d["questions"][5]["choices"].append({"label": "n/a", "score": None}), "no n/a"),
    ],
)
def test_malformed_rubric_data_is_refused(mutate, fragment):
    data = copy.deepcopy(_rubric_data())
    mutate(data)
    with pytest.raises(RubricError, match=fragment.replace("[", r"\[").replace("{", r"\{")):
        rubric_from_mapping(data, source="r.yaml")


def test_passing_a_rubric_to_the_metric_is_refused_with_the_reason(constitution):
    with pytest.raises(RubricOverrideError) as info:
        CoherenceMetric(
            constitution=constitution,
            judge=MockJudge(script={"__default__": "yes"}),
            rubric={"questions": []},
        )
    message = str(info.value)
    assert "fixed, versioned rubric" in message
    assert "constitution" in message


def test_every_question_of_the_current_rubric_ships_two_alternate_wordings(constitution):
    rubric = load_rubric()
    for question in rubric.questions_for(constitution):
        assert len(question.wordings) == 2 and question.text not in question.wordings
        if question.subject is not None:
            assert all(question.subject in wording for wording in question.wordings)
        assert [question.wording(k) for k in range(4)] == [
            question.text,
            *question.wordings,
            question.text,
        ]


def test_wordings_are_part_of_the_fingerprint():
    data = copy.deepcopy(_rubric_data())
    before = rubric_from_mapping(data, source="r.yaml").fingerprint
    data["questions"][0]["wordings"][0] = "Another wording of the mission question?"
    assert rubric_from_mapping(data, source="r.yaml").fingerprint != before


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda d: d["questions"][0].update(wordings=[]), "'wordings' must be a non-empty list"),
        (lambda d: d["questions"][0].update(wordings=["  "]), "wording 1 must be non-empty"),
        (lambda d: d["questions"][0].update(wordings=["a?", "a?"]), "repeat"),
        (lambda d: d["principle_question"].update(wordings=["no slot"]), "must contain"),
    ],
)
def test_malformed_wordings_are_refused(mutate, fragment):
    data = copy.deepcopy(_rubric_data())
    mutate(data)
    with pytest.raises(RubricError, match=fragment.replace("{", r"\{")):
        rubric_from_mapping(data, source="r.yaml")
