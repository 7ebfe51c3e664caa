from __future__ import annotations

from canon.report.github import (
    annotation,
    escape_data,
    escape_property,
    github_annotations,
    github_summary,
)


def _commands(text: str) -> list[str]:
    lines = text.splitlines()
    assert all(line.startswith("::") for line in lines)  # one command a line, nothing else
    return lines


def test_workflow_command_text_cannot_break_out_of_its_line_or_property():
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c\n") == "a%3Ab%2Cc%0A"
    line = annotation("error", "t: x, y", "two\nlines", file="s,1.yaml")
    assert line == "::error title=t%3A x%2C y,file=s%2C1.yaml::two%0Alines"


def test_each_non_canon_artifact_is_an_error_with_its_reasons(mixed):
    lines = _commands(github_annotations(mixed, suite_file="suite.yaml"))
    errors = [line for line in lines if line.startswith("::error ")]
    assert [line.split(",file=")[0] for line in errors[:2]] == [
        "::error title=Canon non-canon artifact contradicts",
        "::error title=Canon non-canon artifact weak",
    ]
    assert len(errors) == 3  # the gated, the weak and the stopped one; not the judge-down one
    weak = errors[1]
    assert "score 0.111 is below the threshold 0.850%0Amission 0.00: Does the artifact" in weak
    assert "%0AP1 0.00: Quote only policies" in weak and "- judge: Reason for P1" in weak
    (warning,) = [line for line in lines if line.startswith("::warning ")]
    assert "1 artifact(s) incomplete (not judged): judge-down; 1 question(s) unscored" in warning
    assert "judge failed: rate limited after 3 retries" in warning and "exit code 3" in warning


def test_a_check_annotates_each_regression_but_not_an_unconfirmed_flip(regressed):
    _, results, comparison = regressed
    lines = _commands(github_annotations(results, comparison, suite_file="suite.yaml"))
    flips = [line for line in lines if "title=Canon regression in " in line]
    assert len(flips) == 1 == sum(f.regression for f in comparison.flips)
    assert flips[0].startswith("::error title=Canon regression in fine P2,file=suite.yaml::")
    assert "1.00 -> 0.00 (confirmed)%0Ajudge: Reason for P2" in flips[0]
    notes = [line for line in lines if line.startswith("::notice ")]
    assert len(notes) == len(comparison.notes)


def test_the_step_summary_is_a_markdown_table_of_regressions(regressed):
    _, results, comparison = regressed
    summary = github_summary(results, comparison, suite="suite")
    assert summary.startswith("### Canon: suite `suite`: REGRESSION\n")
    assert "| fine | P2: Hand any refund above 200 EUR" in summary
    assert "| weak | score 0.111 is below the threshold 0.850 |" in summary
    assert "also-fine | P2" not in summary  # its re-ask failed: not a regression
