"""Errors raised by Canon.

Every error Canon raises on purpose is a ``CanonError``; the CLI turns each one into a
single line on stderr and its ``exit_code``.

    CanonError                      exit 2 unless said otherwise
    ├── UsageError                  a command was called wrongly
    ├── ConfigError                 canon.yaml / pyproject [tool.canon] is unusable
    │   ├── RubricOverrideError     someone tried to supply their own rubric
    │   ├── JudgeSetupError         the model judge cannot be set up (canon.judge.litellm_module)
    │   ├── JudgeCredentialError    the judge's credential is missing or refused
    │   ├── JudgeRejectedError      the provider refused a request as sent (HTTP 400, 422, ...)
    │   ├── JudgeFormatError        the judge answers but never in the format Canon reads
    │   └── TelemetrySetupError     --otel cannot work: the [otel] extra or an OTEL_* setting
    ├── ConstitutionError           constitution file or value is malformed
    ├── RubricError                 the packaged rubric data is malformed
    ├── InputError                  an artifact, suite, trace or JSON input is unusable
    ├── BaselineError               a baseline is missing, corrupt or recorded under another rubric
    ├── GateError                   a deterministic gate (policy, contract) cannot be loaded
    ├── CacheError                  the judge answer cache file is unusable
    ├── BudgetExceededError         a run would spend more than max_cost (exit 4)
    ├── TelemetryExportError        --otel-strict: the OTLP endpoint refused events (exit 3)
    └── JudgeError                  the judge could not answer
        ├── JudgeScriptError        a MockJudge script has no answer for a question
        ├── JudgeRefusedError       the judge refused to judge (a safety refusal)
        └── JudgeUnavailableError   a real judge failed after retries (exit 3)

Every exit status a ``canon`` command ends with is an ``ExitCode`` (like pytest's): the CLI,
the errors above and the reports take their codes from it, and no module writes a bare number.
"""

from __future__ import annotations

import enum
from typing import Any


class ExitCode(enum.IntEnum):
    """What a ``canon`` command's exit status says (docs/cli.md, README's table)."""

    OK = 0  # conforms; every artifact canon; the policy or contract passed
    FAILED = 1  # a regression, a non-canon artifact, a failed gate or policy
    USAGE_ERROR = 2  # bad input, bad config, an unusable baseline or judge setting
    JUDGE_UNAVAILABLE = 3  # nothing decided for want of the judge (or the OTLP endpoint): retry
    OVER_BUDGET = 4  # the run would spend more than max_cost
    INTERNAL_ERROR = 5  # a bug in Canon; never 1, so CI never reads a crash as a regression
    INCONCLUSIVE = 6  # canon check: the judge is too noisy to separate a regression
    INTERRUPTED = 130  # Ctrl-C, as shells report it


class CanonError(Exception):
    """Base class for every error Canon raises deliberately."""

    exit_code: ExitCode = ExitCode.USAGE_ERROR


class UsageError(CanonError):
    """A command or function was called with arguments it cannot use."""


class ConfigError(CanonError):
    """The project configuration cannot be used."""


class RubricOverrideError(ConfigError):
    """A caller tried to replace the fixed rubric."""


class JudgeCredentialError(ConfigError):
    """The model judge's credential is missing or was refused: a setting, not an outage."""


class JudgeRejectedError(ConfigError):
    """The provider refused a request as sent (a 4xx client error): retrying cannot help."""


class JudgeFormatError(ConfigError):
    """The model judge answers, but never in a form that names one of the offered choices."""


class TelemetrySetupError(ConfigError):
    """Sending results as OpenTelemetry events cannot work: the extra or a setting is missing."""


class ConstitutionError(CanonError):
    """The constitution is malformed."""


class RubricError(CanonError):
    """The packaged rubric data is malformed or missing."""


class InputError(CanonError):
    """An input file or value (artifact, suite, trace, JSON) is unusable."""


class BaselineError(CanonError):
    """A baseline is missing, corrupt, or was recorded under another rubric."""


class GateError(CanonError):
    """A deterministic gate (policy or contract) cannot be loaded or run."""


class CacheError(CanonError):
    """The judge answer cache file cannot be opened, read or written."""


class JudgeError(CanonError):
    """The judge could not answer a question."""

    # What the failed attempts spent (a canon.core.usage.Usage), set by a model judge so that
    # a question that ended unscored still counts the calls it made.
    usage: Any = None


class JudgeScriptError(JudgeError):
    """A scripted judge has no answer for a question it was asked."""


class JudgeRefusedError(JudgeError):
    """The judge declined to judge (a safety refusal or a content filter), not an answer."""


class JudgeUnavailableError(JudgeError):
    """A real judge stayed unreachable after retries (network, rate limit, server outage)."""

    exit_code = ExitCode.JUDGE_UNAVAILABLE


class BudgetExceededError(CanonError):
    """A run would spend more than ``max_cost``; it stopped before crossing it (exit 4)."""

    exit_code = ExitCode.OVER_BUDGET


class TelemetryExportError(CanonError):
    """With ``--otel-strict``, the OTLP endpoint did not take every event: CI may retry (exit 3)."""

    exit_code = ExitCode.JUDGE_UNAVAILABLE
