"""``canon align``: how often the judge agrees with a person's labels, recorded for ``check``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from canon.check.align import align_scope, alignment_of
from canon.cli.alignment_check import provenance_of
from canon.cli.baseline import baseline_path, shown
from canon.cli.common import HELP_OPTIONS, config_option, docs_epilog, reports_errors
from canon.cli.run import (
    build_plan,
    check_report_paths,
    load_run,
    no_cache_option,
    quiet_option,
    score_with_progress,
    suite_option,
    text_or_json_option,
    write_report,
)
from canon.cli.spending import estimate_option, prepare_spending, show_estimate
from canon.errors import InputError, JudgeUnavailableError
from canon.project.alignment_store import alignment_path, write_alignment
from canon.project.labels import read_labels
from canon.project.store import dump_json
from canon.report.align import alignment_document, render_alignment
from canon.report.align_html import alignment_html

LABEL_SUFFIXES = (".jsonl", ".yaml", ".yml", ".csv")


@click.command(context_settings=HELP_OPTIONS, epilog=docs_epilog("alignment", "judge"))
@config_option
@suite_option
@click.option(
    "--labels",
    "labels_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The human labels (.jsonl, .yaml or .csv; default: <suite>.labels.jsonl, .yaml, "
    ".yml or .csv next to the suite).",
)
@text_or_json_option
@click.option(
    "--html",
    "html_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write a self-contained HTML report here, with a reliability diagram per question.",
)
@quiet_option
@no_cache_option
@estimate_option
@reports_errors
def align(
    config_path: Path | None,
    suite_path: Path | None,
    labels_path: Path | None,
    output_format: str,
    html_path: Path | None,
    quiet: bool,
    no_cache: bool,
    estimate: bool,
) -> None:
    """Ask the judge about the labelled artifacts and measure its agreement with people.

    Per question: n, raw agreement, Cohen's kappa with a 95% interval (see docs), recall and
    precision of violations with Wilson intervals, the calibration of the judge's
    probabilities (Brier score, expected calibration error and its bins; --html draws the
    reliability diagram), the confusion matrix, and every disagreement with the judge's
    reason, then the judge's usage and cost. The result is
    recorded in <baselines_dir>/<suite>.alignment.json under the judge, rubric and
    constitution, where "canon check" reads it; --estimate prints the calls and cost
    instead and asks nothing. Exit codes: 0 measured, 2 bad input or config, 3 the judge was
    unavailable, 4 the run would exceed max_cost (nothing is recorded on 2, 3 or 4).
    """
    check_report_paths(html_path)
    config, suite, artifacts = load_run(config_path, suite_path)
    labels_file = labels_path or default_labels(suite)
    plan = build_plan(config, use_cache=not no_cache)
    labels = read_labels(
        labels_file, plan.questions, [a.key for a in artifacts], shown=shown(labels_file)
    )
    # the run, its budget check and the estimate score the same artifacts under one plan
    scoped, labelled = align_scope(plan, artifacts, labels.labels)
    if estimate:
        show_estimate(config, scoped, labelled, batch=config.batch, output_format=output_format)
    scoped = prepare_spending(config, scoped, labelled, batch=False, quiet=quiet)
    if not quiet:
        click.echo(
            f"canon align: asking the judge about {len(labelled)} labelled artifact(s)", err=True
        )
    confirmation = score_with_progress(scoped, labelled, quiet)
    found = alignment_of(plan.questions, confirmation, labels.labels)
    if found.unscored:
        first = found.unscored[0]
        raise JudgeUnavailableError(
            f"the judge left {len(found.unscored)} labelled question(s) unanswered (first: "
            f"{first.key} {first.question}: {first.error}); nothing was recorded; run "
            '"canon align" again when the judge is reachable'
        )
    # the page first: a report path that fails leaves nothing recorded (exit 2)
    if html_path is not None:
        page = alignment_html(
            found.questions,
            found.calibration,
            suite=suite.stem,
            judge=plan.judge.name,
            labels=shown(labels_file),
            artifacts=found.artifacts,
            usage=found.usage,
        )
        write_report(html_path, page)
    target = alignment_path(baseline_path(config, suite))
    provenance = provenance_of(plan)
    record = found.record(provenance, rubric_version=plan.rubric.version, labels=shown(labels_file))
    write_alignment(target, record, shown(target))
    arguments: dict[str, Any] = {
        "suite": suite.stem,
        "judge": plan.judge.name,
        "labels": shown(labels_file),
        "artifacts": found.artifacts,
        "recorded": shown(target),
        "usage": found.usage,
        "calibration": found.calibration,
    }
    if output_format == "json":
        sys.stdout.write(dump_json(alignment_document(found.questions, **arguments)))
    else:
        click.echo(render_alignment(found.questions, **arguments), nl=False)


def default_labels(suite: Path) -> Path:
    """The labels file next to a suite: ``<suite>.labels.jsonl`` (or .yaml, .yml, .csv)."""
    candidates = [suite.with_name(f"{suite.stem}.labels{s}") for s in LABEL_SUFFIXES]
    found = [c for c in candidates if c.exists()]
    if len(found) > 1:
        raise InputError(
            f"more than one labels file next to the suite ({', '.join(map(shown, found))}); "
            "pass --labels FILE"
        )
    if not found:
        raise InputError(
            f"no labels for suite '{suite.stem}': pass --labels FILE, or write "
            f'{shown(candidates[0])} (one {{"id": ..., "labels": {{...}}}} a line)'
        )
    return found[0]
