"""``canon rejudge``: re-score the baseline's own artifacts with another judge, then decide."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import click

from canon.check.pipeline import baseline_from_run
from canon.check.rejudge import rejudge_scope, rejudged
from canon.cli.baseline import baseline_path, read_baseline, shown
from canon.cli.common import HELP_OPTIONS, config_option, docs_epilog, reports_errors
from canon.cli.run import (
    build_plan,
    load_run,
    no_cache_option,
    quiet_option,
    score_with_progress,
    suite_option,
    text_or_json_option,
)
from canon.cli.spending import estimate_option, prepare_spending, show_estimate
from canon.core.baseline import require_same_rubric
from canon.errors import BaselineError, InputError, JudgeUnavailableError
from canon.project.baselines import write_baseline
from canon.project.judge_factory import MOCK_PREFIX, decision_wire
from canon.project.store import dump_json
from canon.report.align import rejudge_document, render_rejudge


@click.command(context_settings=HELP_OPTIONS, epilog=docs_epilog("alignment", "baselines"))
@config_option
@suite_option
@click.option(
    "--judge",
    "judge_spec",
    required=True,
    metavar="MODEL",
    help="The new judge, as judge_model takes it (provider:model, or mock:<script.yaml> "
    "relative to canon.yaml).",
)
@click.option(
    "--accept",
    "accept_new",
    is_flag=True,
    help="Write the new judge's answers as the baseline (without it nothing is written).",
)
@text_or_json_option
@quiet_option
@no_cache_option
@estimate_option
@reports_errors
def rejudge(
    config_path: Path | None,
    suite_path: Path | None,
    judge_spec: str,
    accept_new: bool,
    output_format: str,
    quiet: bool,
    no_cache: bool,
    estimate: bool,
) -> None:
    """Re-score the baseline's artifacts with another judge and compare the two judges.

    Per question: old-vs-new agreement (Cohen's kappa with a 95% interval) and every flip
    with the new judge's reason, then the new judge's usage and cost. Only with --accept is
    the new judge's run written as the baseline; then set judge_model to the new judge
    ("canon set-judge"). --estimate prints the calls and cost instead and asks nothing.
    Exit codes: 0 compared (and accepted if asked), 2 bad input, config or baseline, 3 the
    judge was unavailable, 4 the run would exceed max_cost.
    """
    config, suite, artifacts = load_run(config_path, suite_path)
    path = baseline_path(config, suite)
    baseline = read_baseline(path, suite_name=suite.stem)
    if baseline.legacy:
        raise BaselineError(
            f"{shown(path)} is a format {baseline.format} baseline (overall scores only): it "
            'holds no per-question answers to compare judges on; run "canon accept" with the '
            "old judge first"
        )
    # judge_options belong to LLM judges; a scripted judge and a decision model take none
    # of theirs (a decision judge's endpoint and key come from its wire's variables).
    llm = not judge_spec.startswith(MOCK_PREFIX) and decision_wire(judge_spec) is None
    options = config.judge_options if llm else {}
    new_config = dataclasses.replace(
        config, judge_model=judge_spec, judge_options=options, batch=config.batch and llm
    )
    plan = build_plan(new_config, use_cache=not no_cache)
    require_same_rubric(baseline, plan.rubric, source=shown(path))
    chosen = rejudge_scope(artifacts, baseline)  # what the run and the estimate score
    if not chosen:
        raise InputError(
            f"no artifact of the baseline {shown(path)} is in the suite {shown(suite)}; "
            "rejudge compares judges on the artifacts the baseline recorded"
        )
    if estimate:
        show_estimate(new_config, plan, chosen, batch=new_config.batch, output_format=output_format)
    plan = prepare_spending(new_config, plan, chosen, batch=False, quiet=quiet)
    if not quiet:
        click.echo(
            f"canon rejudge: asking {plan.judge.name} about {len(chosen)} baseline artifact(s)",
            err=True,
        )
    confirmation = score_with_progress(plan, chosen, quiet)
    found = rejudged(plan.questions, baseline, confirmation)
    results = found.confirmation.results
    unanswered = [(r.key, c) for r in results for c in r.unscored]
    if unanswered:
        key, cell = unanswered[0]
        raise JudgeUnavailableError(
            f"the new judge left {len(unanswered)} question(s) unanswered (first: {key} "
            f'{cell.id}: {cell.error}); nothing was written; run "canon rejudge" again when '
            "the judge is reachable"
        )
    old_judge = baseline.judge or "(not recorded)"
    outcome = (
        f"nothing written; to record {plan.judge.name}'s answers as the baseline, run "
        f'"canon rejudge --judge {judge_spec} --accept"'
    )
    if accept_new:
        new_baseline = baseline_from_run(plan, found.confirmation)
        write_baseline(path, new_baseline, shown=shown(path))
        outcome = (
            f"accepted: {len(results)} artifact(s) judged by {plan.judge.name} -> {shown(path)}; "
            f'set judge_model to the new judge ("canon set-judge"), and run "canon align" '
            "to validate it against human labels"
        )
    usage = found.usage
    names = (suite.stem, shown(path), old_judge, plan.judge.name, len(results), found.missing)
    if output_format == "json":
        document = rejudge_document(found.questions, *names, accepted=accept_new, usage=usage)
        sys.stdout.write(dump_json(document))
    else:
        text = render_rejudge(found.questions, *names, outcome=outcome, usage=usage)
        click.echo(text, nl=False)
