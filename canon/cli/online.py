"""The options every monitor shares for judging live traces: ``--judge``, ``--sample``,
``--salt``, ``--budget``, ``--config`` and ``--otel`` (verdict events parented to the trace)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from canon.cli.common import config_option
from canon.cli.telemetry import OtelChoice, OtelRequest, otel_options
from canon.core.online import DEFAULT_SALT
from canon.errors import UsageError
from canon.gates.contracts.execution import Execution
from canon.monitor.judging import Budget, Judged, LocalBudget, OnJudged, OnlineJudge

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class JudgeChoice:
    """What the command line said about judging: on or off, the sample, salt and budget."""

    enabled: bool
    config_path: Path | None
    sample: float
    salt: str
    budget: float | None
    otel: OtelChoice

    def given_without_judge(self) -> str | None:
        """The judging option given without ``--judge`` (it would do nothing), if any."""
        if self.enabled:
            return None
        if self.sample != 1.0:
            return "--sample"
        if self.budget is not None:
            return "--budget"
        if self.salt != DEFAULT_SALT:
            return "--salt"
        return None

    def build(
        self, budget: Callable[[float], Budget] | None = None
    ) -> tuple[OnlineJudge | None, OnJudged | None]:
        """The online judge and the sender of its verdict events (None when not judging).
        ``budget`` makes the shared budget from ``--budget`` (default: this process's)."""
        stray = self.given_without_judge()
        if stray is not None:
            raise UsageError(f"{stray} goes with --judge (judge a sample of the traces)")
        if not self.enabled:
            return None, None
        from canon.check.plan import build_plan
        from canon.project.config import load_config, load_env_files

        config = load_config(self.config_path)
        load_env_files(config.source.parent if config.source else config.base_dir)
        request = self.otel.request(config)  # a telemetry set-up that cannot send: exit 2 now
        plan = build_plan(config)
        shared = None
        if self.budget is not None:
            shared = (budget or LocalBudget)(self.budget)
        judge = OnlineJudge(plan, rate=self.sample, salt=self.salt, budget=shared)
        return judge, None if request is None else _sender(request, judge)


def _sender(request: OtelRequest, judge: OnlineJudge) -> OnJudged:
    """Send a judged trace's verdict and answers as events parented to the trace's root."""

    def send(judged: Judged, execution: Execution) -> None:
        from canon.report.otel_events import evaluation_events, trace_link
        from canon.report.otel_export import canon_version, send_events

        assert judged.result is not None
        link = trace_link(execution)
        links = {} if link is None else {judged.result.key: link}
        events = evaluation_events([judged.result], judge.plan, links=links)
        summary = send_events(events, version=canon_version())
        if not summary.complete and not summary.disabled:
            click.echo(
                f"canon: warning: the OTLP endpoint {summary.endpoint} took {summary.sent} of "
                f"{summary.total} event(s) for trace {execution.execution_id}: "
                f"{summary.problem or 'no reason given'}",
                err=True,
            )

    return send


def judge_options(command: F) -> F:
    """Add the judging options; the command receives ``judging`` (a JudgeChoice)."""

    @functools.wraps(command)
    def wrapper(
        *args: Any,
        judge_flag: bool,
        config_path: Path | None,
        sample: float,
        salt: str,
        budget: float | None,
        otel: OtelChoice,
        **kwargs: Any,
    ) -> Any:
        choice = JudgeChoice(judge_flag, config_path, sample, salt, budget, otel)
        return command(*args, judging=choice, **kwargs)

    options = [
        click.option(
            "--judge",
            "judge_flag",
            is_flag=True,
            help="Also judge each trace's answer against the project's constitution with its "
            "judge (from canon.yaml), after the contract: a decision per trace goes into its "
            "record (sampled-out, judged, budget-dropped, unscored, gate-failed).",
        ),
        config_option,
        click.option(
            "--sample",
            type=click.FloatRange(0, 1),
            default=1.0,
            show_default=True,
            help="Share of traces to judge, chosen by sha256(salt, trace id): the same traces "
            "on every worker and every restart.",
        ),
        click.option(
            "--salt",
            default=DEFAULT_SALT,
            show_default=True,
            help="The sampling salt (another salt samples other traces).",
        ),
        click.option(
            "--budget",
            type=click.FloatRange(min=0),
            default=None,
            help="Dollars the judge may spend per UTC day; a sampled trace over it is "
            "budget-dropped (never a pass or a failure).",
        ),
    ]
    wrapped: Any = otel_options(wrapper)
    for option in reversed(options):
        wrapped = option(wrapped)
    return wrapped  # type: ignore[no-any-return]
