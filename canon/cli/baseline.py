"""``canon accept`` records a run as the suite's baseline; ``canon check`` compares with it."""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import click

from canon.check.pipeline import baseline_from_run, compare_run
from canon.check.provenance import (
    ReadAsRecorded,
    answers_phrase,
    read_as_recorded,
    refuse_alias,
)
from canon.check.spend import run_usage
from canon.cli.alignment_check import check_alignment, load_alignment, refuse_changed_judge
from canon.cli.common import HELP_OPTIONS, config_option, docs_epilog, reports_errors
from canon.cli.run import (
    build_plan,
    check_report_paths,
    emit_github,
    load_run,
    no_cache_option,
    quiet_option,
    report_options,
    say_judge_unavailable,
    score_with_progress,
    suite_option,
    suite_run_options,
    write_reports,
)
from canon.cli.spending import prepare_spending, show_estimate, spending_options
from canon.cli.telemetry import OtelChoice, otel_options, send_telemetry
from canon.core.baseline import (
    Baseline,
    require_same_rubric,
)
from canon.core.outcome import Note, NoteKind
from canon.errors import ExitCode, JudgeUnavailableError
from canon.project.baselines import baseline_file, write_baseline
from canon.project.baselines import read_baseline as read_suite_baseline
from canon.project.config import Config
from canon.project.store import dump_json
from canon.report.check import check_document, exit_code_for, render_check
from canon.report.text import printable


@click.command(context_settings=HELP_OPTIONS, epilog=docs_epilog("baselines", "cli"))
@config_option
@suite_option
@quiet_option
@no_cache_option
@spending_options
@report_options
@reports_errors
@otel_options
def accept(
    config_path: Path | None,
    suite_path: Path | None,
    quiet: bool,
    no_cache: bool,
    estimate: bool,
    batch: bool,
    junit_path: Path | None,
    html_path: Path | None,
    otel: OtelChoice,
) -> None:
    """Score the suite and record the run as its baseline.

    Every question is asked twice, so no recorded answer is a single draw of the judge; a
    non-canon verdict is recorded only once re-asking the judge confirmed it beyond
    noise. Exit codes: 0 recorded, 2 bad input or config, 3 the judge was unavailable,
    4 the run would exceed max_cost (nothing is written on 2, 3 or 4).
    """
    check_report_paths(junit_path, html_path)
    config, suite, artifacts = load_run(config_path, suite_path)
    request = otel.request(config)  # refused here, before any judge call
    check_report_paths(baseline_path(config, suite), what="the baseline")  # before any call
    plan = build_plan(config, use_cache=not no_cache)
    refuse_alias(plan.judge)  # before any call: a baseline names a pinned judge
    if estimate:
        show_estimate(config, plan, artifacts, batch=batch or config.batch, record=True)
    plan = prepare_spending(config, plan, artifacts, batch=batch, quiet=quiet, record=True)
    started = time.monotonic()
    confirmation = score_with_progress(plan, artifacts, quiet, record=True)
    results = confirmation.results
    elapsed = time.monotonic() - started
    # Written before the judge check below: a CI run needs the report most when it fails.
    write_reports(
        junit_path,
        html_path,
        results=results,
        plan=plan,
        suite=suite,
        elapsed=elapsed,
        artifacts=artifacts,
    )
    unanswered = [(r.key, c) for r in results for c in r.unscored]
    code = ExitCode.JUDGE_UNAVAILABLE if unanswered else ExitCode.OK
    send_telemetry(
        request, results, plan, artifacts=artifacts, suite=suite, exit_code=code, quiet=quiet
    )
    if unanswered:
        key, cell = unanswered[0]
        raise JudgeUnavailableError(
            f"the judge left {len(unanswered)} question(s) unanswered (first: {key} "
            f'{cell.id}: {cell.error}); the baseline was not written; run "canon accept" '
            "again when the judge is reachable"
        )
    undecided = [key for (key, _q), e in confirmation.evidence.items() if e.status == "unavailable"]
    if undecided:
        raise JudgeUnavailableError(
            f"re-asking the judge failed for {len(undecided)} question(s) a verdict hangs on "
            f'(first: {undecided[0]}); the baseline was not written; run "canon accept" '
            "again when the judge is reachable"
        )
    baseline = baseline_from_run(plan, confirmation)
    path = baseline_path(config, suite)
    unchanged = write_baseline(path, baseline, shown=shown(path))
    canon_count = sum(r.canon for r in results)
    click.echo(run_usage(results).line())
    click.echo(
        f"accepted suite '{suite.stem}': {len(results)} artifact(s) ({canon_count} canon, "
        f"{len(results) - canon_count} non-canon) -> {shown(path)}"
        + (" (unchanged)" if unchanged else "")
    )
    non_canon = [r.key for r in results if not r.canon]
    if non_canon:
        click.echo(
            f"note: recorded {len(non_canon)} non-canon artifact(s) as known failures "
            f'({printable(", ".join(non_canon))}); "canon check" reports them as known while they '
            "stay non-canon (--strict fails on them)"
        )


@click.command(context_settings=HELP_OPTIONS, epilog=docs_epilog("baselines", "cli", "ci", "otel"))
@suite_run_options
@click.option(
    "--strict",
    is_flag=True,
    help=(
        "Also fail on every non-canon artifact: known failures (non-canon in the baseline "
        "too) and judge disagreements on texts identical to the baseline's."
    ),
)
@click.option(
    "--require-alignment",
    "require_alignment",
    type=click.FloatRange(-1.0, 1.0),
    default=None,
    metavar="K",
    help="Exit 2 when a question the check failed on has a recorded kappa with human labels "
    "below K, or none under this judge, rubric and constitution (see canon align).",
)
@spending_options
@report_options
@reports_errors
@otel_options
def check(
    config_path: Path | None,
    suite_path: Path | None,
    select: tuple[str, ...],
    limit: int | None,
    output_format: str,
    quiet: bool,
    no_cache: bool,
    strict: bool,
    require_alignment: float | None,
    estimate: bool,
    batch: bool,
    junit_path: Path | None,
    html_path: Path | None,
    otel: OtelChoice,
) -> None:
    """Score the suite and compare it with its baseline.

    Every failing decision (a flip, a tripped gate, a plainly violated principle, a score
    below the threshold) is confirmed by re-asking the judge before it fails the run; the
    whole run's chance of a false alarm is held under alpha (canon.yaml, default 0.05). A
    text identical to the baseline's cannot regress on the judge alone. Exit codes: 0 conforms,
    1 a regression or a new non-canon artifact, 2 bad input, config or baseline, 3 the
    judge was unavailable, 4 the run would exceed max_cost, 6 inconclusive: the check
    would fail, but the judge is too noisy to separate a regression (its re-asks disagree
    more than flip_rate, or it gives one answer almost everywhere). A baseline judged by
    another judge is refused (exit 2): "canon rejudge" compares the judges first. A failed
    check names, per question it failed on, the judge's recorded agreement with human labels
    ("canon align").
    """
    check_report_paths(junit_path, html_path)
    config, suite, artifacts = load_run(config_path, suite_path, select, limit)
    request = otel.request(config)  # refused here, before any judge call
    plan = build_plan(config, use_cache=not no_cache)
    path = baseline_path(config, suite)
    baseline = read_baseline(path, suite_name=suite.stem)
    require_same_rubric(baseline, plan.rubric, source=shown(path))
    refuse_changed_judge(baseline, plan, shown(path))
    for change in read_as_recorded((plan.judge, plan.confirm_judge), baseline, source=shown(path)):
        click.echo(as_recorded_notice(change, shown(path)), err=True)
    recorded_alignment = load_alignment(path)
    left_out = 0
    if select or limit is not None:
        # Part of the suite was asked for: the rest of the baseline is not "missing", but the
        # report says how much of it this check did not look at.
        chosen = {a.key for a in artifacts}
        left_out = sum(k not in chosen for k in baseline.artifacts)
        baseline = dataclasses.replace(
            baseline, artifacts={k: r for k, r in baseline.artifacts.items() if k in chosen}
        )
    if estimate:
        show_estimate(
            config,
            plan,
            artifacts,
            batch=batch or config.batch,
            output_format=output_format,
            baseline=baseline,
        )
    plan = prepare_spending(config, plan, artifacts, batch=batch, quiet=quiet)
    started = time.monotonic()
    confirmation = score_with_progress(plan, artifacts, quiet, baseline)
    comparison = compare_run(plan, confirmation, baseline, config.tolerance, config.rule, strict)
    if left_out:
        note = Note(
            NoteKind.PARTIAL_CHECK,
            f"{left_out} baseline artifact(s) left out by --select/--limit were not compared "
            "(a partial check, not a missing artifact)",
        )
        comparison = dataclasses.replace(comparison, notes=(*comparison.notes, note))
    results = confirmation.results
    elapsed = time.monotonic() - started
    usage = run_usage(results)
    alignment, refusal = check_alignment(
        recorded_alignment, plan, comparison, results, require_alignment
    )
    comparison = dataclasses.replace(
        comparison, alignment=tuple(status.line for status in alignment)
    )
    if output_format == "json":
        document = check_document(
            comparison,
            baseline,
            suite=suite.stem,
            path=shown(path),
            results=results,
            artifacts=artifacts,
        )
        document["usage"] = usage.as_data()
        document["alignment"] = [status.as_data() for status in alignment]
        sys.stdout.write(dump_json(document))
    else:
        report = render_check(
            comparison,
            baseline,
            suite=suite.stem,
            path=shown(path),
            results=results,
            usage_line=usage.line(),
        )
        click.echo(report, nl=False)
    if output_format == "github":
        emit_github(results, suite, comparison, artifacts)
    write_reports(
        junit_path,
        html_path,
        results=results,
        plan=plan,
        suite=suite,
        comparison=comparison,
        elapsed=elapsed,
        artifacts=artifacts,
    )
    # --require-alignment refuses a verdict from an unvalidated judge: exit 2, said once.
    code = exit_code_for(comparison) if refusal is None else ExitCode.USAGE_ERROR
    send_telemetry(
        request,
        results,
        plan,
        artifacts=artifacts,
        suite=suite,
        exit_code=code,
        quiet=quiet,
        comparison=comparison,
    )
    if refusal is not None:
        click.echo(f"canon: error: {printable(refusal)}", err=True)
    elif code == ExitCode.JUDGE_UNAVAILABLE:
        say_judge_unavailable(results, "check")  # the cause, as score says it
    sys.exit(code)


def baseline_path(config: Config, suite: Path) -> Path:
    """Where a suite's baseline lives: ``<baselines_dir>/<suite file stem>.json``."""
    return baseline_file(config, suite.stem)


def read_baseline(path: Path, *, suite_name: str) -> Baseline:
    """Read and validate a suite's baseline file (the baseline store's reader)."""
    return read_suite_baseline(
        path, shown=shown(path), name=suite_name, record='run "canon accept"'
    )


def as_recorded_notice(change: ReadAsRecorded, source: str) -> str:
    """What a check says of a judge set to read its answers as its baseline's were read."""
    ways, settings = [], []
    if change.labels:
        ways.append("from labels alone")
        settings.append("logprobs: auto")
    if change.samples is not None:
        ways.append(f"from {answers_phrase(change.samples)} an ask")
        settings.append("samples: auto")
    return (
        f"canon: {source} was judged {' and '.join(ways)}, so {change.judge} reads its answers "
        f'that way in this check too; run "canon accept" to record them as it reads them by '
        f"default ({', '.join(settings)}, docs/judge.md)"
    )


def shown(path: Path) -> str:
    """A path as the user would type it: relative to here when it is below here."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return str(path)
