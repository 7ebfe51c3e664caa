"""The text edit behind ``canon set-judge``: one value changes, every other byte stays."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from canon.errors import ConfigError
from canon.project.config_edit import new_config_text, set_judge_model, yaml_scalar

NEW = "together:deepseek-ai/DeepSeek-V4-Flash-0731"


def _edit(text: str, model: str = NEW) -> str:
    return set_judge_model(text, model, source="canon.yaml").text


def test_replacing_a_plain_value_keeps_the_comment_and_every_other_line():
    text = "# project config\njudge_model: mock:judge.yaml   # offline\nthreshold: 0.8\n"
    edit = set_judge_model(text, NEW, source="canon.yaml")
    assert edit.text == (f"# project config\njudge_model: {NEW}   # offline\nthreshold: 0.8\n")
    assert edit.previous == "mock:judge.yaml"
    assert edit.added is False


@pytest.mark.parametrize(
    "line",
    [
        'judge_model: "openai:gpt-4o" # quoted',
        "judge_model: 'openai:gpt-4o'",
        'judge_model: !!str "openai:gpt-4o"',
        '"judge_model": openai:gpt-4o',
    ],
)
def test_replacing_a_quoted_or_tagged_value_swaps_just_that_value(line):
    new = _edit(f"threshold: 0.8\n{line}\n")
    value = line.split(":", 1)[1].split(" #")[0].strip()
    assert new == f"threshold: 0.8\n{line.replace(value, NEW)}\n"
    assert yaml.safe_load(new)["judge_model"] == NEW


def test_an_empty_value_is_filled_in_after_the_colon():
    assert _edit("judge_model:   # pick one\nthreshold: 1\n") == (
        f"judge_model: {NEW}   # pick one\nthreshold: 1\n"
    )
    assert _edit("judge_model:") == f"judge_model: {NEW}"


def test_a_value_on_the_line_below_its_key_is_replaced_where_it_is():
    assert _edit("judge_model:\n  openai:gpt-4o\n") == f"judge_model:\n  {NEW}\n"


def test_a_missing_key_is_appended_after_a_final_newline_is_added():
    assert _edit("threshold: 0.8") == f"threshold: 0.8\njudge_model: {NEW}\n"
    assert _edit("threshold: 0.8\n# end\n") == f"threshold: 0.8\n# end\njudge_model: {NEW}\n"


def test_an_empty_or_comment_only_file_gains_the_key():
    assert _edit("") == f"judge_model: {NEW}\n"
    assert _edit("# nothing yet") == f"# nothing yet\njudge_model: {NEW}\n"


def test_crlf_files_keep_crlf_line_endings():
    assert _edit("threshold: 0.8\r\n") == f"threshold: 0.8\r\njudge_model: {NEW}\r\n"
    assert _edit("judge_model: a:b\r\nx: 1\r\n".replace("x", "threshold")) == (
        f"judge_model: {NEW}\r\nthreshold: 1\r\n"
    )


def test_an_indented_top_level_mapping_gets_the_new_key_at_its_indent():
    new = _edit("  threshold: 0.8\n")
    assert new == f"  threshold: 0.8\n  judge_model: {NEW}\n"
    assert yaml.safe_load(new) == {"threshold": 0.8, "judge_model": NEW}


def test_a_nested_judge_model_key_is_not_mistaken_for_the_setting():
    text = "judge_options:\n  judge_model: nested\n"
    new = _edit(text)
    assert new == text + f"judge_model: {NEW}\n"


def test_setting_the_value_already_there_returns_the_text_untouched():
    text = "judge_model: 'openai:gpt-4o'  # keep my quotes\n"
    edit = set_judge_model(text, "openai:gpt-4o", source="canon.yaml")
    assert edit.text == text
    assert edit.previous == "openai:gpt-4o"


def test_a_value_inside_a_flow_mapping_is_replaced_in_place():
    assert _edit("{judge_model: a:b, threshold: 0.8}") == (
        f"{{judge_model: {NEW}, threshold: 0.8}}"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("judge_model: |\n  openai:gpt-4o\n", "spans several lines"),
        ("judge_model: >-\n  openai:gpt-4o\n", "spans several lines"),
        ("judge_model: openai\n  gpt-4o\n", "spans several lines"),
        ('judge_model: "openai:\n  gpt-4o"\n', "spans several lines"),
        ("judge_model:\n  provider: openai\n", "holds a mapping"),
        ("judge_model:\n  - openai:gpt-4o\n", "holds a list"),
        ("base: &m openai:gpt-4o\njudge_model: *m\n", "is an alias"),
        ("judge_model: a:b\nthreshold: 1\njudge_model: c:d\n", "lines 1 and 3"),
        ("- judge_model: a:b\n", "got a list"),
        ("just text\n", "got a single value"),
        ("judge_model: [unclosed\n", "not valid YAML"),
        ("threshold: 1\nthreshold: 2\n", "duplicate key 'threshold'"),
        ("{threshold: 0.8}\n", "flow mapping"),
        ("threshold: 1\n---\nthreshold: 2\n", "not valid YAML"),
    ],
)
def test_files_the_edit_cannot_handle_safely_are_refused_with_the_reason(text, message):
    with pytest.raises(ConfigError, match=r"^canon\.yaml") as caught:
        set_judge_model(text, NEW, source="canon.yaml")
    assert message in str(caught.value)


def test_an_edit_that_would_end_up_in_a_second_document_is_refused():
    # Appending after an explicit document end would start a new document.
    with pytest.raises(ConfigError, match="cannot set judge_model safely"):
        set_judge_model("threshold: 1\n...\n", NEW, source="canon.yaml")


def test_a_nan_elsewhere_in_the_file_does_not_count_as_a_changed_setting():
    assert _edit("threshold: .nan\n") == f"threshold: .nan\njudge_model: {NEW}\n"


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("openai:gpt-5.6-luna", "openai:gpt-5.6-luna"),
        ("mock:judge.yaml", "mock:judge.yaml"),
        ("1:20", '"1:20"'),  # YAML 1.1 reads this as the number 80
        ("null", '"null"'),
        ("mock:my script.yaml", '"mock:my script.yaml"'),
        ("a #b", '"a #b"'),
        ('x"y', '"x\\"y"'),
        ("tab\there", '"tab\\x09here"'),
    ],
)
def test_yaml_scalar_quotes_only_values_yaml_would_misread(value, written):
    assert yaml_scalar(value) == written
    assert yaml.safe_load(f"k: {written}") == {"k": value}


def test_a_new_config_holds_just_the_judge_model_line():
    assert new_config_text("mock:judge.yaml") == "judge_model: mock:judge.yaml\n"


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1))
def test_any_model_string_reads_back_exactly_after_the_edit(model):
    new = set_judge_model("threshold: 0.5  # keep\n", model, source="c.yaml").text
    assert new.startswith("threshold: 0.5  # keep\n")
    assert yaml.safe_load(new) == {"threshold": 0.5, "judge_model": model}


_KEYS = st.sampled_from(["threshold", "tolerance", "suite", "policy", "baselines_dir", "x_y"])
_PLAIN = st.from_regex(r"[a-z][a-z0-9_./-]{0,12}", fullmatch=True).filter(
    lambda v: not isinstance(yaml.safe_load(v), bool | None)
)
_COMMENT = st.one_of(st.just(""), st.from_regex(r" +# [ -~]{0,20}", fullmatch=True))
_VALUE = st.one_of(
    _PLAIN,
    _PLAIN.map(lambda v: f'"{v}"'),
    _PLAIN.map(lambda v: f"'{v}'"),
    st.integers(0, 999).map(str),
)


@st.composite
def config_files(draw: st.DrawFn) -> tuple[list[str], int | None, str]:
    """Lines of a config file (no endings), the judge_model line's index or None, the EOL."""
    keys = draw(st.lists(_KEYS, unique=True, max_size=5))
    lines = []
    for key in keys:
        lines.extend(draw(st.lists(st.sampled_from(["", "# note", "  # indented"]), max_size=2)))
        lines.append(f"{key}: {draw(_VALUE)}{draw(_COMMENT)}")
    judge_at = None
    if draw(st.booleans()):
        judge_at = draw(st.integers(0, len(lines)))
        lines.insert(judge_at, f"judge_model: {draw(_VALUE)}{draw(_COMMENT)}")
    return lines, judge_at, draw(st.sampled_from(["\n", "\r\n"]))


@settings(max_examples=200, deadline=None)
@given(config_files(), st.booleans(), st.sampled_from([NEW, "mock:judge.yaml", "a:1:20"]))
def test_the_edit_preserves_every_line_but_the_judge_model_line(file, final_eol, model):
    lines, judge_at, eol = file
    text = eol.join(lines) + (eol if final_eol and lines else "")
    new = _edit(text, model)
    old_lines = text.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    if judge_at is None:
        assert new.startswith(text)
        ending = eol if eol in text else "\n"  # an empty file has no ending to follow
        assert new[len(text) :].lstrip("\r\n") == f"judge_model: {yaml_scalar(model)}{ending}"
    else:
        assert len(new_lines) == len(old_lines)
        for index, (old, line) in enumerate(zip(old_lines, new_lines, strict=True)):
            if index != judge_at:
                assert line == old
        old_comment = lines[judge_at].partition(" #")[2]
        assert new_lines[judge_at].rstrip("\r\n").endswith(old_comment)
    before = yaml.safe_load(text) or {}
    after = yaml.safe_load(new)
    assert after["judge_model"] == model
    assert {k: v for k, v in after.items() if k != "judge_model"} == {
        k: v for k, v in before.items() if k != "judge_model"
    }


_YAMLISH = st.text(
    alphabet=st.sampled_from(list("judge_model: thresold#'\"|>-[]{},&*!?.\n\r\t 0123456789")),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_YAMLISH, st.text(max_size=40)))
def test_any_text_is_either_edited_correctly_or_refused_with_a_config_error(text):
    try:
        new = _edit(text)
    except ConfigError:
        return
    after = yaml.safe_load(new)
    assert after["judge_model"] == NEW


def test_a_value_inherited_through_a_merge_key_is_refused_rather_than_shadowed():
    # Canon's strict reader counts a merged key plus an explicit one as a duplicate, so
    # appending a judge_model line would leave a config that Canon cannot load.
    text = "base: &b {judge_model: 'a:b'}\n<<: *b\nthreshold: 1\n"
    with pytest.raises(ConfigError, match=r"cannot set judge_model safely.*duplicate key"):
        set_judge_model(text, NEW, source="canon.yaml")
