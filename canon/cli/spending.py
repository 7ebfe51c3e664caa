"""What the scoring commands share about spending: --estimate, --batch, and max_cost."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from canon.check.runner import ScoringPlan
from canon.check.spend import (
    BudgetJudge,
    Estimate,
    decision_judge,
    estimate_run,
    model_judge,
    pending_requests,
    planned_looks,
    refuse_over_budget,
)
from canon.core.artifact import Artifact
from canon.core.baseline import Baseline
from canon.core.usage import total
from canon.errors import ConfigError, ExitCode
from canon.judge.cache import CachingJudge
from canon.judge.sync import run_sync
from canon.project.config import Config
from canon.project.store import dump_json

F = TypeVar("F", bound=Callable[..., Any])

estimate_option = click.option(
    "--estimate",
    is_flag=True,
    help="Print how many judge calls the run would make and what they would cost, then exit "
    "0 without asking anything.",
)
_batch_option = click.option(
    "--batch",
    is_flag=True,
    help="Ask through the provider's Batch API (cheaper, slower; resumable: run the command "
    "again to pick up a batch already submitted). Same as judge_options: batch: true. "
    "Refused for a decision judge (typesafe:, openai-decisions:): its wire has no batch mode.",
)


def spending_options(command: F) -> F:
    """Add --estimate and --batch to a command that scores a suite."""
    return estimate_option(_batch_option(command))


def show_estimate(
    config: Config,
    plan: ScoringPlan,
    artifacts: Sequence[Artifact],
    *,
    batch: bool,
    output_format: str = "text",
    baseline: Baseline | None = None,
    record: bool = False,
) -> None:
    """Print the run's estimate (nothing is asked) and exit 0; a check passes its baseline,
    accept ``record`` (its second looks)."""
    refuse_decision_batch(config, plan, batch)
    estimate = estimate_run(
        plan,
        artifacts,
        batch=batch and _batchable(plan) is None,
        baseline=baseline,
        record=record,
    )
    print_estimate(config, estimate, output_format)


def print_estimate(config: Config, estimate: Estimate, output_format: str = "text") -> None:
    """Print an estimate (text or JSON, with the config's max_cost) and exit 0."""
    if output_format == "json":
        document = {"estimate": estimate.as_data(), "max_cost_usd": config.max_cost}
        sys.stdout.write(dump_json(document))
    else:
        click.echo(estimate.line())
        if config.max_cost is not None:
            click.echo(f"max_cost in {config.source}: ${config.max_cost:.4f}")
    sys.exit(ExitCode.OK)


def prepare_spending(
    config: Config,
    plan: ScoringPlan,
    artifacts: Sequence[Artifact],
    *,
    batch: bool,
    quiet: bool,
    record: bool = False,
) -> ScoringPlan:
    """Refuse a run over budget before it spends; with batch mode, fill the cache by batch
    (with ``record``, accept's second looks too)."""
    use_batch = batch or config.batch
    refuse_decision_batch(config, plan, use_batch)
    reason = _batchable(plan) if use_batch else None
    if use_batch and reason is not None:
        click.echo(f"canon: {reason}", err=True)  # said even when quiet: the price differs
        use_batch = False
    if config.max_cost is not None:
        estimate = estimate_run(plan, artifacts, batch=use_batch, record=record)
        refuse_over_budget(estimate, config.max_cost, config.source or "canon.yaml")
    if not use_batch:
        return plan
    return _prefill_by_batch(plan, artifacts, quiet, record)


def refuse_decision_batch(config: Config, plan: ScoringPlan, batch: bool) -> None:
    """Refuse batch mode for a decision judge (exit 2): its wire has no batch mode, and its
    one call per response already carries every question at a fraction of an LLM's price.
    Asked of the plan's judge, so ``rejudge --judge typesafe:...`` is refused too."""
    decided = decision_judge(plan.judge) if batch else None
    if decided is not None:
        raise ConfigError(
            f"judge {decided.name} is a decision model: the {decided.client.wire.name} wire "
            "has no batch mode (one call per response already asks every question); drop "
            f"--batch, and judge_options: batch from {config.source or 'canon.yaml'}"
        )


def _batchable(plan: ScoringPlan) -> str | None:
    """Why this plan cannot use batch mode, or None when it can."""
    judge = model_judge(plan.judge)
    if judge is None:
        return f"batch mode needs a model judge, not {plan.judge.name}; answering as usual"
    if not isinstance(plan.judge, CachingJudge):
        return "batch mode writes into the answer cache, which is off; asking online instead"
    from canon.judge.batch import batch_unsupported

    return batch_unsupported(judge)


def _prefill_by_batch(
    plan: ScoringPlan, artifacts: Sequence[Artifact], quiet: bool, record: bool = False
) -> ScoringPlan:
    from canon.judge.batch import PrepaidJudge, run_batch

    cached = plan.judge
    judge = model_judge(cached)
    assert isinstance(cached, CachingJudge) and judge is not None  # checked by _batchable
    pending, _, _ = pending_requests(plan, artifacts, planned_looks(plan, artifacts, record=record))
    # The batch holds the judge's own requests; a confirm_judge's later looks go online.
    requests = [(p.key, p.request) for p in pending if p.key is not None and p.judge is cached]
    if not requests:
        return plan

    def say(text: str) -> None:
        if not quiet:
            click.echo(text, err=True)

    outcome = run_sync(run_batch(judge, cached.cache, requests, on_progress=say))
    click.echo(outcome.line(), err=True)
    if isinstance(cached.inner, BudgetJudge):  # the online rest is held to what is left
        cached.inner.prepaid(total(outcome.usage.values()).cost or 0.0)
    prepaid = PrepaidJudge(cached.inner, cached.cache, outcome.usage)
    return dataclasses.replace(plan, judge=prepaid)
