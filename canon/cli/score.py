"""``canon score``: score a suite's artifacts and print each verdict."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

import click

from canon.cli.common import HELP_OPTIONS, docs_epilog, reports_errors
from canon.cli.run import (
    build_plan,
    check_report_paths,
    emit_github,
    load_run,
    report_options,
    say_judge_unavailable,
    score_with_progress,
    suite_run_options,
    write_reports,
)
from canon.cli.spending import prepare_spending, show_estimate, spending_options
from canon.cli.telemetry import OtelChoice, otel_options, send_telemetry
from canon.core.compare import scored_blind_notes
from canon.core.scoring import ArtifactResult, fails_on_evidence
from canon.errors import ExitCode
from canon.project.store import dump_json
from canon.report.json_report import results_document
from canon.report.text import render_results, render_scored_inconclusive


@click.command(context_settings=HELP_OPTIONS, epilog=docs_epilog("cli", "configuration", "otel"))
@suite_run_options
@spending_options
@report_options
@reports_errors
@otel_options
def score(
    config_path: Path | None,
    suite_path: Path | None,
    select: tuple[str, ...],
    limit: int | None,
    output_format: str,
    quiet: bool,
    no_cache: bool,
    estimate: bool,
    batch: bool,
    junit_path: Path | None,
    html_path: Path | None,
    otel: OtelChoice,
) -> None:
    """Score every artifact in the suite; exit 1 if any is non-canon.

    Exit codes: 0 all canon, 1 a non-canon artifact, 2 bad input or config,
    3 the judge was unavailable, 4 the run would exceed max_cost, 6 inconclusive: a
    failure the judge read could not have been confirmed in this run (a decision model
    alone, one response: add replicates or a confirm_judge) or the judge stayed split.
    """
    check_report_paths(junit_path, html_path)
    config, suite, artifacts = load_run(config_path, suite_path, select, limit)
    request = otel.request(config)  # refused here, before any judge call
    plan = build_plan(config, use_cache=not no_cache)
    if estimate:
        show_estimate(
            config, plan, artifacts, batch=batch or config.batch, output_format=output_format
        )
    plan = prepare_spending(config, plan, artifacts, batch=batch, quiet=quiet)
    started = time.monotonic()
    confirmation = score_with_progress(plan, artifacts, quiet)
    results = confirmation.results
    blind = scored_blind_notes(results, confirmation.power, plan.rule)
    elapsed = time.monotonic() - started
    if output_format == "json":
        document = results_document(results, plan, artifacts)
        if blind:
            document["inconclusive"] = list(blind)
        sys.stdout.write(dump_json(document))
    else:
        click.echo(render_results(results, artifacts), nl=False)
        click.echo(render_scored_inconclusive(blind), nl=False)
    if output_format == "github":
        emit_github(results, suite, artifacts=artifacts, inconclusive=blind)
    write_reports(
        junit_path,
        html_path,
        results=results,
        plan=plan,
        suite=suite,
        elapsed=elapsed,
        artifacts=artifacts,
        inconclusive=blind,
    )
    code = exit_code(results, blind)
    send_telemetry(
        request, results, plan, artifacts=artifacts, suite=suite, exit_code=code, quiet=quiet
    )
    if code == ExitCode.JUDGE_UNAVAILABLE:
        say_judge_unavailable(results, "score")
    sys.exit(code)


def exit_code(results: Sequence[ArtifactResult], blind: Sequence[str] = ()) -> ExitCode:
    """FAILED for a real failure; else JUDGE_UNAVAILABLE when the judge left questions
    unscored; else INCONCLUSIVE when the run could not tell (``blind``); else OK."""
    if any(fails_on_evidence(r) for r in results):
        return ExitCode.FAILED
    if any(r.unscored for r in results):
        return ExitCode.JUDGE_UNAVAILABLE
    return ExitCode.INCONCLUSIVE if blind else ExitCode.OK
