"""``canon calibrate``: measure the judge's own noise on the suite and recommend settings."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from canon.check.calibrate import (
    Calibration,
    CalibrationCell,
    FlipTally,
    ask_sample,
    calibration_cells,
    response_calls,
    sent_requests,
)
from canon.check.runner import ScoringPlan
from canon.check.spend import estimate_requests, refuse_over_budget
from canon.cli.common import HELP_OPTIONS, config_option, docs_epilog, reports_errors
from canon.cli.run import build_plan, format_option, load_run, quiet_option, suite_option
from canon.cli.spending import estimate_option, print_estimate
from canon.errors import JudgeUnavailableError
from canon.judge.base import response_judge
from canon.judge.sync import run_sync
from canon.project.store import dump_json
from canon.report.text import printable


@click.command(context_settings=HELP_OPTIONS, epilog=docs_epilog("baselines", "judge"))
@config_option
@suite_option
@format_option
@click.option("--cells", default=40, show_default=True, help="How many cells to sample.")
@click.option("--repeats", default=5, show_default=True, help="Answers asked per cell.")
@click.option("--seed", default=0, show_default=True, help="Seed of the cell sample.")
@quiet_option
@estimate_option
@reports_errors
def calibrate(
    config_path: Path | None,
    suite_path: Path | None,
    output_format: str,
    cells: int,
    repeats: int,
    seed: int,
    quiet: bool,
    estimate: bool,
) -> None:
    """Re-ask a sample of cells and report the judge's flip rate with Wilson intervals.

    Each answer is a fresh re-ask variant, as in `canon check`'s confirmations, and no
    answer comes from the cache. The recommended flip_rate is the upper bound of the
    noisiest question kind; put it in canon.yaml. It also reports paraphrase stability (each
    cell asked in every wording of its question) and order stability (in up to three choice
    orders), asked with first-ask settings: about 5 more calls per cell. Progress goes to
    stderr (one line per cell), then the report ends with the judge's usage and cost.

    A decision model is asked as the check asks it: one call per sampled artifact carries
    every wording of its sampled questions and their first wording in other choice orders.
    A deterministic judge (a decision model, an LLM at temperature 0) answers an identical
    request identically and is never re-asked: no flip rate is measured or recommended
    ("deterministic": true, "recommended_flip_rate": null), only its stability.

    Exit codes: 0 measured, 2 bad input or config, 3 the judge was unavailable, 4 the run
    would exceed max_cost.
    """
    config, _suite, artifacts = load_run(config_path, suite_path)
    plan = build_plan(config, use_cache=False)
    sample = calibration_cells(plan, artifacts, cells=cells, repeats=repeats, seed=seed)
    requests = sent_requests(plan, sample)
    if estimate:
        print_estimate(config, estimate_requests(plan, requests), output_format)
    if config.max_cost is not None:
        source = config.source or "canon.yaml"
        refuse_over_budget(estimate_requests(plan, requests), config.max_cost, source)
    if not quiet:
        click.echo(
            f"canon calibrate: asking {plan.judge.name} {len(requests)} question(s) about "
            f"{len(sample)} cell(s){_calls(plan, sample)}",
            err=True,
        )

    def progress(done: int, total: int, cell: CalibrationCell) -> None:
        if not quiet:
            asked = len(cell.requests)
            click.echo(
                f"[{done}/{total}] {printable(cell.artifact.key)} {cell.question.id}: "
                f"{asked} answer(s)",
                err=True,
            )

    found = run_sync(ask_sample(plan, sample, concurrency=config.concurrency, on_cell=progress))
    if output_format == "json":
        sys.stdout.write(dump_json(calibration_document(found, config.rule.flip_rate)))
    else:
        click.echo(render_calibration(found, config.rule.flip_rate), nl=False)
    if found.unavailable:  # a measurement with answers missing is no measurement to act on
        raise JudgeUnavailableError(
            f"the judge was unavailable for {found.unavailable} answer(s), left out of the "
            f'rates above (first: {found.first_unavailable}); run "canon calibrate" again '
            "when the judge is reachable"
        )


def _calls(plan: ScoringPlan, sample: Sequence[CalibrationCell]) -> str:
    """`` in N call(s) (one per artifact)`` for a judge that answers a whole response at once."""
    if response_judge(plan.judge) is None:
        return ""
    return f" in {len(response_calls(sample))} call(s), one per artifact"


def _tally(tally: FlipTally) -> str:
    low, high = tally.interval
    return f"{tally.flips}/{tally.answers} = {tally.rate or 0.0:.1%} [{low:.1%}, {high:.1%}]"


def render_calibration(found: Calibration, assumed: float) -> str:
    """The calibration as text: per kind, per question, and the advice."""
    if found.deterministic:
        lines = [
            f"canon calibrate: {found.cells} cell(s); the judge is deterministic (an identical "
            "request gets the identical answer): no re-ask flip rate, only stability "
            "(95% Wilson intervals)",
        ]
    else:
        lines = [
            f"canon calibrate: {found.cells} cell(s) x {found.repeats} answer(s); flip rate = "
            "answers differing from their cell's majority (95% Wilson intervals)",
        ]
    lines.extend(f"  {kind:10} {_tally(t)}" for kind, t in found.by_kind.items())
    if found.by_question:
        lines.append("per question:")
        lines.extend(f"  {qid:12} {_tally(t)}" for qid, t in found.by_question.items())
    for title, table in (
        ("paraphrase stability: answers across the question's wordings", found.paraphrase),
        ("order stability: answers across choice orders", found.order),
    ):
        if table:
            lines.append(f"{title} (first-ask settings; share differing from the majority):")
            lines.extend(f"  {kind:10} {_tally(t)}" for kind, t in table.items())
    if found.failed:
        lines.append(f"note: the judge failed {found.failed} answer(s); they are left out")
    rate = found.recommended_flip_rate
    shown = "none" if rate is None else f"{rate:.2f}"
    lines.append(f"recommended flip_rate: {shown} (now {assumed:.2f}); " + found.advice)
    lines.append(found.usage.line())
    return "\n".join(lines) + "\n"


def calibration_document(found: Calibration, assumed: float) -> dict[str, Any]:
    """The calibration as plain data, for ``--format json``."""

    def tally(t: FlipTally) -> dict[str, Any]:
        return {
            "flips": t.flips,
            "answers": t.answers,
            "rate": t.rate,
            "wilson_95": list(t.interval),
        }

    return {
        "cells": found.cells,
        "repeats": found.repeats,
        "deterministic": found.deterministic,
        "failed_answers": found.failed,
        "unavailable_answers": found.unavailable,
        "by_kind": {k: tally(t) for k, t in found.by_kind.items()},
        "by_question": {k: tally(t) for k, t in found.by_question.items()},
        "paraphrase_stability": {k: tally(t) for k, t in found.paraphrase.items()},
        "order_stability": {k: tally(t) for k, t in found.order.items()},
        "assumed_flip_rate": assumed,
        "recommended_flip_rate": found.recommended_flip_rate,
        "advice": found.advice,
        "usage": found.usage.as_data(),
    }
