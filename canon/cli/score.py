"""``canon score``: score a suite's artifacts and print each verdict."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import click

from canon.cli.common import config_option, reports_errors
from canon.config import Config, load_config, load_env_files
from canon.core.scoring import ArtifactResult
from canon.errors import ConfigError
from canon.gate_loading import contract_gate, policy_gate
from canon.judge.factory import judge_from_spec
from canon.judge.sync import run_sync
from canon.report.json_report import results_document
from canon.report.text import render_results
from canon.runner import ArtifactGate, ScoringPlan, score_artifacts
from canon.store import constitution_from_file, dump_json, load_rubric
from canon.suite import read_suite


@click.command()
@config_option
@click.option(
    "--suite",
    "suite_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Suite file to score (default: the config's 'suite').",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="How to print the results.",
)
@click.option("--quiet", is_flag=True, help="Print no progress lines on stderr.")
@reports_errors
def score(
    config_path: Path | None, suite_path: Path | None, output_format: str, quiet: bool
) -> None:
    """Score every artifact in the suite; exit 1 if any is non-canon.

    Exit codes: 0 all canon, 1 a non-canon artifact, 2 bad input or config,
    3 the judge was unavailable.
    """
    config = load_config(config_path)
    load_env_files(config.source.parent if config.source else config.base_dir)
    plan = build_plan(config)
    suite = suite_path or config.suite
    if suite is None:
        raise ConfigError("no suite to score: pass --suite FILE or set 'suite' in canon.yaml")
    artifacts = read_suite(suite)

    def progress(done: int, total: int, result: ArtifactResult) -> None:
        if not quiet:
            verdict = "canon" if result.canon else "NON-CANON"
            click.echo(f"[{done}/{total}] {result.key} {verdict}", err=True)

    results = run_sync(
        score_artifacts(plan, artifacts, concurrency=config.concurrency, on_result=progress)
    )
    if output_format == "json":
        sys.stdout.write(dump_json(results_document(results, plan)))
    else:
        click.echo(render_results(results), nl=False)
    code = exit_code(results)
    if code == 3:
        unscored = [c for r in results for c in r.unscored]
        click.echo(
            f"canon: error: the judge was unavailable: {len(unscored)} question(s) unscored "
            f"(first: {unscored[0].id}: {unscored[0].error}); "
            'run "canon score" again when the judge is reachable',
            err=True,
        )
    sys.exit(code)


def exit_code(results: Sequence[ArtifactResult]) -> int:
    """1 for a real failure; else 3 when the judge left questions unscored; else 0."""
    if any(_fails_on_evidence(r) for r in results):
        return 1
    return 3 if any(r.unscored for r in results) else 0


def _fails_on_evidence(result: ArtifactResult) -> bool:
    # Unscored questions alone do not make a regression: CI may retry a flaky judge.
    below = result.score is not None and result.score < result.threshold
    return bool(result.stopped_by) or result.gated or below


def build_plan(config: Config) -> ScoringPlan:
    """The scoring plan a config describes."""
    if config.constitution_path is None:
        raise ConfigError(
            f"{config.source or 'no canon.yaml found'}: set 'constitution_path' to your "
            "constitution YAML"
        )
    if config.judge_model is None:
        raise ConfigError(
            f"{config.source or 'no canon.yaml found'}: set 'judge_model' "
            "(provider:model, or mock:<script.yaml>)"
        )
    return ScoringPlan(
        constitution=constitution_from_file(config.constitution_path),
        rubric=load_rubric(),
        judge=judge_from_spec(config.judge_model, base_dir=config.base_dir),
        threshold=config.threshold,
        gates=_config_gates(config),
    )


def _config_gates(config: Config) -> tuple[ArtifactGate, ...]:
    gates: list[ArtifactGate] = []
    if config.policy is not None:
        gates.append(policy_gate(config.policy))
    if config.contract is not None:
        gates.append(contract_gate(config.contract))
    return tuple(gates)
