from __future__ import annotations

import pytest

from canon import constitution_from_file
from canon.core.constitution import constitution_from_mapping
from canon.errors import ConstitutionError


def test_constitution_reads_mission_and_ordered_principles(write):
    path = write(
        "c.yaml", "mission: Help.\nprinciples:\n  - Be kind.\n  - id: b\n    text: Be brief.\n"
    )
    constitution = constitution_from_file(path)
    assert constitution.mission == "Help."
    assert [p.text for p in constitution.principles] == ["Be kind.", "Be brief."]
    assert [p.id for p in constitution.principles] == [None, "b"]


def test_constitution_digest_is_stable_and_changes_with_content():
    a = constitution_from_mapping({"mission": "M", "principles": ["x", "y"]})
    b = constitution_from_mapping({"mission": "M", "principles": ["x", "y"]})
    c = constitution_from_mapping({"mission": "M", "principles": ["y", "x"]})
    assert a.digest == b.digest
    assert a.digest != c.digest
    assert len(a.digest) == 16


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"principles": ["x"]}, "'mission' is missing"),
        ({"mission": "", "principles": ["x"]}, "'mission' must be non-empty text"),
        ({"mission": 3, "principles": ["x"]}, "'mission' must be non-empty text, got a int"),
        ({"mission": "M"}, "'principles' is missing"),
        ({"mission": "M", "principles": []}, "'principles' is empty"),
        ({"mission": "M", "principles": "x"}, "must be a list"),
        ({"mission": "M", "principles": ["x", " X "]}, "principle 2 repeats principle 1"),
        ({"mission": "M", "principles": [5]}, "principle 1 must be text or a mapping"),
        ({"mission": "M", "principles": [{"txt": "x"}]}, "unknown key(s) 'txt'"),
        ({"mission": "M", "principles": [{"id": "a"}]}, "'text' must be non-empty text"),
        (
            {"mission": "M", "principles": [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]},
            "reuses id 'a'",
        ),
        ({"mission": "M", "principles": ["x"], "goals": []}, "unknown key(s) 'goals'"),
        (["M"], "expected a mapping"),
    ],
)
def test_malformed_constitution_is_refused_with_a_clear_message(data, fragment):
    with pytest.raises(ConstitutionError) as info:
        constitution_from_mapping(data, source="c.yaml")
    assert fragment in str(info.value)
    assert str(info.value).startswith("c.yaml")


def test_constitution_file_errors_name_the_file(write, tmp_path):
    with pytest.raises(ConstitutionError, match="not found"):
        constitution_from_file(tmp_path / "absent.yaml")
    bad = write("bad.yaml", "mission: [unclosed\n")
    with pytest.raises(ConstitutionError, match="not valid YAML"):
        constitution_from_file(bad)
    dup = write("dup.yaml", "mission: a\nmission: b\nprinciples: [x]\n")
    with pytest.raises(ConstitutionError, match="duplicate key 'mission'"):
        constitution_from_file(dup)
