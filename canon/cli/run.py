"""What the commands that score a suite share: options, the scoring plan, progress."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from canon.config import Config, load_config, load_env_files
from canon.core.artifact import Artifact
from canon.core.scoring import ArtifactResult
from canon.errors import ConfigError
from canon.gate_loading import contract_gate, policy_gate
from canon.judge.factory import judge_from_spec
from canon.judge.sync import run_sync
from canon.runner import ArtifactGate, ScoringPlan, score_artifacts
from canon.store import constitution_from_file, load_rubric
from canon.suite import read_suite

suite_option = click.option(
    "--suite",
    "suite_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Suite file to score (default: the config's 'suite').",
)
quiet_option = click.option("--quiet", is_flag=True, help="Print no progress lines on stderr.")
format_option = click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Text for people, JSON for machines.",
)


def load_run(
    config_path: Path | None, suite_path: Path | None
) -> tuple[Config, Path, tuple[Artifact, ...]]:
    """The config (with its .env files loaded), the suite's path and its artifacts."""
    config = load_config(config_path)
    load_env_files(config.source.parent if config.source else config.base_dir)
    suite = suite_path or config.suite
    if suite is None:
        raise ConfigError("no suite to score: pass --suite FILE or set 'suite' in canon.yaml")
    return config, suite, read_suite(suite)


def build_plan(config: Config) -> ScoringPlan:
    """The scoring plan a config describes."""
    where = config.source or "no canon.yaml found"
    if config.constitution_path is None:
        raise ConfigError(f"{where}: set 'constitution_path' to your constitution YAML")
    if config.judge_model is None:
        raise ConfigError(f"{where}: set 'judge_model' (provider:model, or mock:<script.yaml>)")
    return ScoringPlan(
        constitution=constitution_from_file(config.constitution_path),
        rubric=load_rubric(),
        judge=judge_from_spec(
            config.judge_model, base_dir=config.base_dir, options=config.judge_options
        ),
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


def score_with_progress(
    config: Config, plan: ScoringPlan, artifacts: Sequence[Artifact], quiet: bool
) -> tuple[ArtifactResult, ...]:
    """Score the artifacts, printing one progress line per artifact on stderr unless quiet."""

    def progress(done: int, total: int, result: ArtifactResult) -> None:
        if not quiet:
            verdict = "canon" if result.canon else "NON-CANON"
            click.echo(f"[{done}/{total}] {result.key} {verdict}", err=True)

    return run_sync(
        score_artifacts(plan, artifacts, concurrency=config.concurrency, on_result=progress)
    )
