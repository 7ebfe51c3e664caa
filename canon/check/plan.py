"""The one scoring plan: what a config and a command's options say a run is scored with.

Every door builds its plan here: the CLI's commands, the pytest fixtures, ``CoherenceMetric``
(``CoherenceMetric.from_config``), batch mode and ``--estimate``. A setting therefore means
the same thing whichever door a project is run through: the judge and its answer cache, the
confirmation judge, the budget (``max_cost``, held across both judges), the concurrency, the
decision rule and the deterministic gates.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from canon.check.gate_loading import contract_gate, policy_gate
from canon.check.runner import ArtifactGate, ScoringPlan
from canon.check.spend import BudgetJudge, CallBudget, Ledger, decision_judge, model_judge
from canon.errors import ConfigError
from canon.judge.base import Judge
from canon.judge.cache import CachingJudge, cached_judge
from canon.project.config import Config
from canon.project.judge_factory import MOCK_PREFIX, judge_from_spec
from canon.project.store import constitution_from_file, load_rubric


def build_plan(
    config: Config, *, use_cache: bool = True, judge_model: str | None = None
) -> ScoringPlan:
    """The scoring plan ``config`` describes.

    ``use_cache``: a model judge answers through the config's answer cache (``--no-cache``
    turns it off). ``judge_model`` replaces the config's judge (``canon rejudge --judge``).
    A model judge is held to ``max_cost`` when it is set; with a ``confirm_judge`` the two
    judges share one budget.
    """
    where = config.source or "no canon.yaml found"
    if config.constitution_path is None:
        raise ConfigError(f"{where}: set 'constitution_path' to your constitution YAML")
    spec = judge_model or config.judge_model
    if spec is None:
        raise ConfigError(f"{where}: set 'judge_model' (provider:model, or mock:<script.yaml>)")
    constitution = constitution_from_file(config.constitution_path)
    rubric = load_rubric()
    gates = config_gates(config)
    judge = _judge(config, spec, "judge_model")
    second = None
    if config.confirm_judge is not None:
        second = _judge(config, config.confirm_judge, "confirm_judge")
    # Opened last, so a config error above never leaves an empty cache file behind.
    cache = config.judge_cache if use_cache else None
    plan = ScoringPlan(
        constitution=constitution,
        rubric=rubric,
        judge=cached_judge(judge, cache),
        threshold=config.threshold,
        gates=gates,
        confirm_judge=None if second is None else cached_judge(second, cache),
        concurrency=config.concurrency,
        rule=config.rule,
    )
    return with_budget(plan, config.max_cost, config.source or "canon.yaml")


def _judge(config: Config, spec: str, setting: str) -> Judge:
    """The judge ``spec`` names, built with the config's judge_options; the confirm judge
    with its own confirm_judge_options when set, else judge_options too (a script, none)."""
    mock = spec.startswith(MOCK_PREFIX)
    confirming = setting == "confirm_judge"
    key = "judge_options"
    if confirming and config.confirm_judge_options is not None:
        options: Mapping[str, Any] | None = config.confirm_judge_options
        key = "confirm_judge_options"
    else:
        options = None if mock and confirming else config.judge_options
    try:
        return judge_from_spec(spec, base_dir=config.base_dir, options=options, setting=key)
    except ConfigError as exc:
        if config.source is None:
            raise
        if confirming:
            raise ConfigError(f"{config.source}: confirm_judge: {exc}") from None
        if mock:
            raise  # a script's own error names the script file
        # The factory speaks of judge_model and judge_options: say which file holds them.
        raise ConfigError(f"{config.source}: {exc}") from None


def config_gates(config: Config) -> tuple[ArtifactGate, ...]:
    """The deterministic gates a config names: the policy, then the contract."""
    gates: list[ArtifactGate] = []
    if config.policy is not None:
        gates.append(policy_gate(config.policy))
    if config.contract is not None:
        gates.append(contract_gate(config.contract))
    return tuple(gates)


def with_budget(plan: ScoringPlan, max_cost: float | None, source: object) -> ScoringPlan:
    """The plan with its model judges held to ``max_cost`` together (under their caches:
    a cache hit is free). A scripted judge spends nothing and is left as it is."""
    if max_cost is None:
        return plan
    ledger = Ledger(max_cost, source)
    judge = _guarded(plan.judge, ledger)
    second = None if plan.confirm_judge is None else _guarded(plan.confirm_judge, ledger)
    return dataclasses.replace(plan, judge=judge, confirm_judge=second)


def _guarded(judge: Judge, ledger: Ledger) -> Judge:
    cached = judge if isinstance(judge, CachingJudge) else None
    inner = cached.inner if cached is not None else judge
    decided = decision_judge(inner)
    if decided is not None:
        # priced per call: the judge asks the ledger before each one
        if decided.spend_guard is None:
            decided.spend_guard = CallBudget(ledger)
        return judge
    model = model_judge(inner)
    if model is None or model is not inner:
        return judge  # a scripted judge, or one already guarded
    budget = BudgetJudge(model, ledger)
    return budget if cached is None else CachingJudge(budget, cached.cache)
