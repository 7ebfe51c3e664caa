"""Sorting a failed judge call by what can fix it: a retry, or a changed setting.

A retry may fix a timeout, a refused connection, 429, 5xx or a malformed reply (a
``Failure``); a refused credential (``JudgeCredentialError``), an unknown model
(``JudgeSetupError``) or a request the provider rejects (``JudgeRejectedError``) is raised at once.
Anything else is a bug and surfaces with its traceback.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from canon.errors import JudgeCredentialError, JudgeRejectedError, JudgeUnavailableError
from canon.judge.litellm_module import (
    JudgeSetupError,
    connection_error,
    load_litellm,
    missing_keys,
    provider_error,
)
from canon.judge.notices import FailureCause

FailureKind = Literal["transient", "malformed", "unparseable", "refused"]

# litellm prefixes messages with its class names ("litellm.RateLimitError: RateLimitError:
# OpenAIException - slow down"); the reader needs only the provider's words.
_LITELLM_PREFIX = re.compile(r"^(?:litellm\.\w+:\s*)?(?:\w+:\s*)?(?:\w*Exception\s*-\s*)?")


# An endpoint answering these wants fewer calls (529: Anthropic's "overloaded").
_OVERLOAD_STATUSES = (429, 503, 529)


class JudgeTimeoutError(JudgeUnavailableError):
    """The judge stayed unavailable because its calls timed out (no reply within the timeout)."""


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed attempt that a retry might fix."""

    kind: FailureKind
    detail: str
    retry_after: float | None = None
    overload: bool = False  # a 429, 503, 529 or timeout: the endpoint wants fewer calls
    cause: FailureCause | None = None  # why a transient or malformed attempt failed
    status: int | None = None  # the HTTP status, when the endpoint answered


def timed_out(timeout: float) -> Failure:
    """The failure of a call that got no reply within ``timeout`` seconds."""
    return Failure(
        "transient",
        f"timed out: no reply within {timeout:g} s",
        overload=True,
        cause=FailureCause.TIMEOUT,
    )


def _transient(detail: str, status: int | None, retry_after: float | None) -> Failure:
    """A failure a retry may fix, by the endpoint's status (None: no answer came)."""
    if status is None:
        cause = FailureCause.UNREACHABLE
    elif status == 429:
        cause = FailureCause.RATE_LIMITED
    elif status in _OVERLOAD_STATUSES:
        cause = FailureCause.OVERLOADED
    else:
        cause = FailureCause.SERVER_ERROR
    return Failure("transient", detail, retry_after, status in _OVERLOAD_STATUSES, cause, status)


def _malformed(detail: str) -> Failure:
    return Failure(
        "malformed",
        f"the provider sent a malformed reply ({detail})",
        cause=FailureCause.MALFORMED,
    )


def classify_litellm(exc: Exception, model: str, api_key: str | None, timeout: float) -> Failure:
    """Sort one failed litellm call: return what a retry may fix, raise what it cannot."""
    litellm = load_litellm()
    if isinstance(exc, litellm.Timeout):
        return timed_out(timeout)
    if not isinstance(exc, provider_error()):
        raise exc  # a bug, not a provider failure: let it surface with its traceback
    status = getattr(exc, "status_code", None)
    detail = _describe(exc, status)
    if _caused_by(exc, json.JSONDecodeError):
        return _malformed(detail)
    if status in (401, 403) or isinstance(
        exc, litellm.AuthenticationError | litellm.PermissionDeniedError
    ):
        raise _refused(model, detail, _key_advice(litellm, model, api_key)) from exc
    if status == 404 or isinstance(exc, litellm.NotFoundError):
        raise not_found(model, detail) from exc
    if "missing credentials" in detail.lower() or "api_key client option" in detail:
        # The SDK refuses to send without a key: a missing credential, not an outage.
        raise _refused(model, detail, _key_advice(litellm, model, api_key)) from exc
    if _caused_by(exc, connection_error()):  # litellm reports it as a 500
        return _transient(detail, None, _retry_after(exc))
    if status in (408, 409, 429) or (isinstance(status, int) and status >= 500):
        return _transient(detail, status, _retry_after(exc))
    if isinstance(exc, litellm.APIConnectionError):
        return _transient(detail, None, _retry_after(exc))
    # 400/422 and the like: this request cannot succeed as sent, and a retry (or CI's
    # retry of exit 3) would only repeat it; the run stops with the provider's words.
    raise rejected(model, detail) from exc


def classify_direct(exc: Exception, model: str, api_key: str | None) -> Failure:
    """Sort one failed call of the direct transport, as ``classify_litellm`` does."""
    from canon.judge.openai_http import EndpointError, EndpointUnreachable, MalformedReply

    if isinstance(exc, EndpointUnreachable):
        return _transient(f"could not reach the provider ({exc})", None, None)
    if isinstance(exc, MalformedReply):
        return _malformed(str(exc))
    if not isinstance(exc, EndpointError):
        raise exc  # a bug: let it surface with its traceback
    detail = str(exc)
    if exc.status in (401, 403):
        advice = (
            "set OPENAI_API_KEY to a valid key (in the environment or a .env next to canon.yaml)"
            if api_key is None
            else "check judge_options: api_key in canon.yaml"
        )
        raise _refused(model, detail, advice) from exc
    if exc.status == 404:
        raise not_found(model, detail) from exc
    if exc.status in (408, 409, 429) or exc.status >= 500:
        return _transient(detail, exc.status, exc.retry_after)
    raise rejected(model, detail) from exc


def refuses_schema(exc: Exception) -> bool:
    """Whether a failed call says the endpoint does not take ``response_format``."""
    status = getattr(exc, "status", getattr(exc, "status_code", None))
    text = str(exc).lower()
    return status in (400, 422) and any(
        word in text for word in ("response_format", "json_schema", "schema")
    )


def refuses_logprobs(exc: Exception) -> bool:
    """Whether a failed call says the endpoint does not return ``logprobs``."""
    status = getattr(exc, "status", getattr(exc, "status_code", None))
    return status in (400, 422) and "logprob" in str(exc).lower()


def refuses_n(exc: Exception) -> bool:
    """Whether a failed call says the endpoint gives one answer a request (its ``n``, as
    llama.cpp's server answers: "Field 'n': Value must be between 1 <= value <= 1")."""
    status = getattr(exc, "status", getattr(exc, "status_code", None))
    return status in (400, 422) and _NAMES_N.search(str(exc)) is not None


# ``n`` named as a field or parameter: quoted, or after "field"/"parameter"
_NAMES_N = re.compile(r"""['"`]n['"`]|\b(?:field|parameter|param)\s+n\b""", re.IGNORECASE)


def rejected(model: str, detail: str) -> JudgeRejectedError:
    """The error for a request the provider refused as sent (a client error, exit 2)."""
    return JudgeRejectedError(
        f"judge {model} rejected the request ({detail}); a retry sends the same request, so "
        "check judge_model, judge_options (max_tokens, structured_output, logprobs) and the "
        "artifact's length against the provider's limits"
    )


def not_found(model: str, detail: str) -> JudgeSetupError:
    """The error for a model the provider does not know."""
    return JudgeSetupError(
        f"judge {model} was not found by the provider ({detail}); check the model "
        "name in judge_model and that your account can use it"
    )


def _refused(model: str, detail: str, advice: str) -> JudgeCredentialError:
    return JudgeCredentialError(f"judge {model} refused the credentials ({detail}); {advice}")


def _describe(exc: Exception, status: object) -> str:
    message = _LITELLM_PREFIX.sub("", " ".join(str(getattr(exc, "message", exc)).split()))
    if len(message) > 200:
        message = message[:199] + "…"
    if _caused_by(exc, connection_error()):
        # litellm reports a refused or dropped connection as a 500; say what really happened.
        return f"could not reach the provider ({message})"
    return f"HTTP {status}: {message}" if isinstance(status, int) else message


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _retry_after(exc: Exception) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        headers = getattr(exc, "litellm_response_headers", None)
    try:
        value = headers.get("retry-after") if headers is not None else None
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError):  # an HTTP date, or junk: fall back to our own backoff
        return None


def _key_advice(litellm: Any, model: str, api_key: str | None) -> str:
    """The next step for an auth failure: which key to set, or to check the one that is set."""
    if api_key is not None:
        return "check judge_options: api_key in canon.yaml"
    missing = missing_keys(litellm, model)
    if missing:
        return f"set {' and '.join(missing)} (in the environment or a .env next to canon.yaml)"
    provider = model.split("/", 1)[0].upper()
    return (
        f"check that {provider}_API_KEY (or the provider's key) is valid for this model "
        "(in the environment or a .env next to canon.yaml)"
    )
