"""The ``canon`` command line: a click group whose subcommands load lazily.

Layer: interface. Imports every layer below it (errors, core, gates, judge, project, check,
report, monitor, playground); printing and exit codes live here and in the pytest plugin.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from canon.cli.common import (
    HELP_OPTIONS,
    docs_epilog,
    report_canon_error,
    report_internal_error,
    require_stdout,
)
from canon.cli.notices import print_notice
from canon.cli.output import protect_stdout
from canon.errors import CanonError, ExitCode
from canon.judge.notices import listening

# name -> "module:attribute"; loaded only when the subcommand runs, so `canon --help`
# stays fast and never pulls in litellm or scipy.
_COMMANDS: dict[str, str] = {
    "score": "canon.cli.score:score",
    "accept": "canon.cli.baseline:accept",
    "check": "canon.cli.baseline:check",
    "policy": "canon.cli.policy:policy",
    "contract": "canon.cli.contract:contract",
    "monitor": "canon.cli.monitor:monitor",
    "set-judge": "canon.cli.set_judge:set_judge",
    "calibrate": "canon.cli.calibrate:calibrate",
    "init": "canon.cli.init:init",
    "align": "canon.cli.align:align",
    "rejudge": "canon.cli.rejudge:rejudge",
}

_SUMMARIES: dict[str, str] = {
    "score": "Score artifacts against the constitution and print verdicts.",
    "accept": "Score the suite and record the run as its baseline.",
    "check": "Score the suite and compare it with its baseline.",
    "policy": "Check structured JSON output against a policy (deterministic gate).",
    "contract": "Check OpenTelemetry traces against behavioral contracts.",
    "monitor": "Judge live traces at scale: OTLP ingest, Redis Streams workers, the report.",
    "set-judge": "Set judge_model in the project's canon.yaml (provider:model).",
    "calibrate": "Measure how often the judge changes its answers; recommend flip_rate.",
    "init": "Scaffold a working offline Canon project in the current directory.",
    "align": "Measure the judge's agreement with human labels (Cohen's kappa) and record it.",
    "rejudge": "Re-score the baseline's artifacts with another judge and compare the judges.",
}


class _LazyGroup(click.Group):
    """A group that imports each subcommand's module on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, _, attribute = target.partition(":")
        command: click.Command = getattr(importlib.import_module(module_name), attribute)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        """Run the subcommand; whatever escapes it never exits 1 (see cli.common)."""
        protect_stdout()  # `canon check | head` must not lose the reports or exit 5
        try:
            require_stdout()  # every command reports on stdout; a closed one loses the result
            with listening(print_notice):  # the judge's backoffs and warnings, on stderr
                return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except CanonError as exc:
            report_canon_error(exc)
        except KeyboardInterrupt:
            # click would print "Aborted!" and exit 1, the regression code; 130 is the
            # shell's own code for a run stopped by Ctrl-C.
            click.echo("canon: interrupted", err=True)
            sys.exit(ExitCode.INTERRUPTED)
        except Exception as exc:  # the last line of defence
            report_internal_error(exc, self._command_named(ctx, exc))

    @staticmethod
    def _command_named(ctx: click.Context, exc: BaseException) -> str:
        """The innermost command the exception escaped (``canon policy evaluate``)."""
        path = ctx.command_path
        trace = exc.__traceback__
        while trace is not None:  # click's invoke frames each hold that command's context
            local = trace.tb_frame.f_locals.get("ctx")
            if isinstance(local, click.Context):
                path = local.command_path
            trace = trace.tb_next
        return path

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Listing summaries from a static table avoids importing every subcommand.
        rows = [(name, _SUMMARIES[name]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=_LazyGroup,
    context_settings=HELP_OPTIONS,
    epilog=docs_epilog("cli", "configuration", "baselines", "ci"),
)
@click.version_option(package_name="canon-testing", prog_name="canon")
def main(**_: Any) -> None:
    """Canon: coherence regression tests for AI agents."""
