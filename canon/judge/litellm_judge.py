"""LiteLLMJudge: asks a real model through litellm — the only module that imports it.

litellm is imported on the first question, not on import, because it takes seconds to load
and ``canon --help`` or a MockJudge run must not pay for it.

Failures are sorted by what a retry can fix. Connection errors, timeouts, 429 and 5xx are
retried with exponential backoff (honouring Retry-After); when the attempts run out the
judge is *unavailable* (exit 3, so CI can retry). Auth errors and unknown models are
unavailable at once: repeating the call cannot help. A reply that is malformed or names no
choice is retried too, then becomes a JudgeError for that question — an unscored cell,
never a pass.

With ``constrain_answers`` the request also carries a llama.cpp GBNF grammar that admits
only ``ANSWER: <label>``, so even a tiny local model replies in the format Canon reads.
Only servers that accept a ``grammar`` field (llama.cpp's) support it; others refuse it.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import random
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

from canon.core.prompt import ANSWER_TAG, parse_reply, render_prompt
from canon.core.rubric import Question
from canon.core.scoring import Answer
from canon.errors import ConfigError, JudgeError, JudgeUnavailableError, UsageError
from canon.judge.base import JudgeRequest
from canon.judge.prompt_cache import mark_shared_prefix
from canon.judge.usage import attach_usage, note_response, open_meter

PIP_LINE = 'pip install "litellm>=1.40"'
_RATIONALE_LIMIT = 1000
# litellm prefixes messages with its class names ("litellm.RateLimitError: RateLimitError:
# OpenAIException - slow down"); the reader needs only the provider's words.
_LITELLM_PREFIX = re.compile(r"^(?:litellm\.\w+:\s*)?(?:\w+:\s*)?(?:\w*Exception\s*-\s*)?")

FailureKind = Literal["transient", "malformed", "unparseable"]


class JudgeSetupError(ConfigError):
    """The model judge cannot be set up here (litellm missing, or an unknown provider)."""


@dataclass(frozen=True, slots=True)
class _Failure:
    """One failed attempt that a retry might fix."""

    kind: FailureKind
    detail: str
    retry_after: float | None = None


_litellm_module: Any = None


def load_litellm() -> Any:
    """Import litellm once, offline-safe and quiet; explain how to install it if missing."""
    global _litellm_module
    if _litellm_module is None:
        # Without this, importing litellm tries to download a price list from the internet.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        try:
            module: Any = importlib.import_module("litellm")
        except ImportError as exc:
            raise JudgeSetupError(
                f"model judges need litellm, which is not installed ({exc}); run: {PIP_LINE}"
            ) from exc
        module.suppress_debug_info = True  # no "Give Feedback" banners in CI logs
        _litellm_module = module
    return _litellm_module


def _provider_error() -> type[BaseException]:
    """The base class of every error litellm maps from a provider.

    It is the OpenAI SDK's ``OpenAIError`` (litellm depends on that SDK); litellm's own
    ``exceptions.OpenAIError`` is an unrelated class of the same name.
    """
    base: type[BaseException] = importlib.import_module("openai").OpenAIError
    return base


class LiteLLMJudge:
    """A judge backed by any litellm model (``provider/model``), with retries and sampling."""

    def __init__(
        self,
        model: str,
        *,
        samples: int = 1,
        temperature: float = 0.0,
        timeout: float = 30,
        max_attempts: int = 3,
        api_base: str | None = None,
        api_key: str | None = None,
        max_tokens: int | None = None,
        backoff: float = 0.5,
        max_backoff: float = 20.0,
        constrain_answers: bool = False,
        reask_temperature: float = 0.7,
    ) -> None:
        if not isinstance(model, str) or "/" not in model.strip("/"):
            raise UsageError(f"LiteLLMJudge model must look like provider/model, got {model!r}")
        _check_number("samples", samples, minimum=1, whole=True)
        _check_number("max_attempts", max_attempts, minimum=1, whole=True)
        _check_number("timeout", timeout, minimum=0.001)
        _check_number("temperature", temperature, minimum=0.0)
        _check_number("reask_temperature", reask_temperature, minimum=0.0)
        _check_number("backoff", backoff, minimum=0.0)
        _check_number("max_backoff", max_backoff, minimum=0.0)
        self.model = model.strip()
        self.samples = samples
        self.temperature = float(temperature)
        # Confirmation re-asks (request.variant > 0) sample at least this hot: at temperature
        # 0 a re-ask would replay the first answer and confirm nothing.
        self.reask_temperature = float(reask_temperature)
        self.timeout = float(timeout)
        self.max_attempts = max_attempts
        self.api_base = api_base
        self.api_key = api_key
        self.max_tokens = max_tokens
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.constrain_answers = bool(constrain_answers)
        self._checked_provider = False
        # Set when a question just used up its attempts on a transient failure; until a call
        # succeeds again, other questions try once instead of waiting out the full backoff,
        # so an outage costs one backoff cycle per run rather than one per question.
        self._outage = False
        # A refused key stays refused for the run: later questions fail without a request.
        self._refusal: str | None = None

    @property
    def name(self) -> str:
        """The litellm model string, as recorded in baselines."""
        return self.model

    def __repr__(self) -> str:
        return f"LiteLLMJudge({self.model!r}, samples={self.samples})"

    def cache_identity(self) -> dict[str, Any]:
        """The settings that shape this judge's answers, for the answer cache's keys."""
        # litellm may take the endpoint from the environment (OPENAI_BASE_URL and the like);
        # the same model name at another endpoint is another judge.
        endpoints = {
            name: value
            for name, value in sorted(os.environ.items())
            if name.endswith(("_BASE_URL", "_API_BASE"))
        }
        return {
            "model": self.model,
            "samples": self.samples,
            "temperature": self.temperature,
            "reask_temperature": self.reask_temperature,
            "max_tokens": self.max_tokens,
            "constrain_answers": self.constrain_answers,
            "api_base": self.api_base,
            "endpoints": endpoints,
        }

    async def answer(self, request: JudgeRequest) -> Answer:
        """Ask the model, retrying what a retry can fix; the distribution is label frequency."""
        litellm = load_litellm()
        self._check_provider(litellm)
        if self._refusal is not None:
            raise JudgeUnavailableError(self._refusal)
        question = request.question
        messages = render_prompt(
            question,
            request.artifact.text,
            request.constitution,
            request.instructions,
            request.variant,
        ).as_messages()
        messages = mark_shared_prefix(litellm, self.model, messages, request.prefix_shares)
        temperature = self.temperature
        if request.variant > 0:
            temperature = max(temperature, self.reask_temperature)
        extra_body = {"grammar": answer_grammar(question)} if self.constrain_answers else None
        failure = _Failure("transient", "no attempt was made")
        meter = open_meter()  # every response below is counted, failed attempts included
        budget = 1 if self._outage else self.max_attempts
        attempt = 0
        while attempt < budget:
            attempt += 1
            try:
                replies = await self._sample(litellm, messages, extra_body, temperature)
            except Exception as exc:
                failure = self._classify(litellm, exc)
            else:
                if self._outage:  # the provider answers again: back to the full budget
                    self._outage, budget = False, self.max_attempts
                tallied = _tally(question, replies, self.samples)
                if isinstance(tallied, Answer):
                    return attach_usage(tallied, meter)
                failure = tallied
            if attempt < budget:
                await asyncio.sleep(self._delay(attempt, failure.retry_after))
        attempts = f"after {budget} attempt(s)"
        if failure.kind == "transient":
            self._outage = True
            raise JudgeUnavailableError(
                f"judge {self.model} is unavailable {attempts}: {failure.detail}; check the "
                "network and the provider's status, then run again (CI may simply retry)"
            )
        raise JudgeError(f"judge {self.model}, {attempts}: {failure.detail}")

    async def _sample(
        self,
        litellm: Any,
        messages: list[dict[str, str]],
        extra_body: dict[str, str] | None,
        temperature: float,
    ) -> list[str]:
        """``samples`` replies: one request asking for n, topped up if the provider gave fewer."""
        replies = await self._complete(litellm, messages, self.samples, extra_body, temperature)
        while len(replies) < self.samples:  # the provider ignored ``n``
            replies.extend(await self._complete(litellm, messages, 1, extra_body, temperature))
        return replies[: self.samples]

    async def _complete(
        self,
        litellm: Any,
        messages: list[dict[str, str]],
        n: int,
        extra_body: dict[str, str] | None,
        temperature: float,
    ) -> list[str]:
        options: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": temperature,
            "timeout": self.timeout,
            "max_retries": 0,  # the retry policy lives here, not in the provider SDK
            "drop_params": True,  # providers without ``n`` or ``temperature`` just ignore them
        }
        if n > 1:
            options["n"] = n
        if self.api_base is not None:
            options["api_base"] = self.api_base
        if self.api_key is not None:
            options["api_key"] = self.api_key
        if self.max_tokens is not None:
            options["max_tokens"] = self.max_tokens
        if extra_body is not None:
            options["extra_body"] = extra_body
        # A backstop in case a provider ignores ``timeout`` (e.g. a stalled stream).
        async with asyncio.timeout(self.timeout + 1.0):
            response = await litellm.acompletion(**options)
        note_response(litellm, self.model, response)
        return [_content(choice) for choice in response.choices]

    def _check_provider(self, litellm: Any) -> None:
        """Refuse a provider litellm does not know once, as bad config rather than n failures."""
        if self._checked_provider:
            return
        try:
            litellm.get_llm_provider(model=self.model, api_base=self.api_base)
        except Exception as exc:
            raise JudgeSetupError(
                f"judge model {self.model!r}: litellm does not recognise the provider "
                f"{self.model.split('/', 1)[0]!r}; set judge_model to provider:model with a "
                "provider from https://docs.litellm.ai/docs/providers"
            ) from exc
        self._checked_provider = True

    def _classify(self, litellm: Any, exc: Exception) -> _Failure:
        """Sort one failed call: return what a retry may fix, raise what it cannot."""
        if isinstance(exc, (TimeoutError, litellm.Timeout)):  # asyncio's is the same class
            return _Failure("transient", f"no reply within {self.timeout:g} s")
        if not isinstance(exc, _provider_error()):
            raise exc  # a bug, not a provider failure: let it surface with its traceback
        status = getattr(exc, "status_code", None)
        detail = _describe(exc, status)
        if _caused_by(exc, json.JSONDecodeError):
            return _Failure("malformed", f"the provider sent a malformed reply ({detail})")
        if status in (401, 403) or isinstance(
            exc, litellm.AuthenticationError | litellm.PermissionDeniedError
        ):
            self._refusal = (
                f"judge {self.model} refused the credentials ({detail}); "
                f"{_key_advice(litellm, self.model)}"
            )
            raise JudgeUnavailableError(self._refusal) from exc
        if status == 404 or isinstance(exc, litellm.NotFoundError):
            raise JudgeUnavailableError(
                f"judge {self.model} was not found by the provider ({detail}); check the "
                "model name in judge_model and that your account can use it"
            ) from exc
        transient_status = status in (408, 409, 429) or (isinstance(status, int) and status >= 500)
        if transient_status or isinstance(exc, litellm.APIConnectionError):
            return _Failure("transient", detail, _retry_after(exc))
        # 400/422 and the like: this request cannot succeed as sent; the question goes unscored.
        raise JudgeError(f"judge {self.model} rejected the request ({detail})") from exc

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        delay = self.backoff * 2.0 ** (attempt - 1) * (1.0 + 0.25 * random.random())
        if retry_after is not None:
            delay = max(delay, retry_after)
        return min(delay, self.max_backoff)


def answer_grammar(question: Question) -> str:
    """A llama.cpp GBNF grammar whose only sentences are ``ANSWER: <one of the labels>``."""
    # A JSON string literal is also a valid GBNF one for any printable label (quotes and
    # backslashes escaped the same way), so json.dumps does the quoting.
    labels = " | ".join(json.dumps(choice.label, ensure_ascii=False) for choice in question.choices)
    return f'root ::= "{ANSWER_TAG}: " ({labels})'


def _tally(question: Question, replies: list[str], samples: int) -> Answer | _Failure:
    """Turn replies into an answer (label frequencies), or the failure when none parsed."""
    labels: list[str] = []
    problem = ""
    for reply in replies:
        try:
            labels.append(parse_reply(question, reply).label)
        except JudgeError as exc:
            problem = str(exc)
    if not labels:
        return _Failure("unparseable", problem or f"question {question.id}: no reply")
    counts = Counter(labels)
    distribution = {label: count / len(labels) for label, count in sorted(counts.items())}
    rationale = replies[0].strip()[:_RATIONALE_LIMIT] if len(labels) == len(replies) else None
    if len(labels) < samples:
        rationale = f"{samples - len(labels)} of {samples} samples were unreadable and ignored"
    return Answer(distribution=distribution, rationale=rationale)


def _content(choice: Any) -> str:
    message = getattr(choice, "message", None)
    content = getattr(message, "content", None)
    return content if isinstance(content, str) else ""


def _describe(exc: Exception, status: object) -> str:
    message = _LITELLM_PREFIX.sub("", " ".join(str(getattr(exc, "message", exc)).split()))
    if len(message) > 200:
        message = message[:199] + "…"
    if _caused_by(exc, _connection_error()):
        # litellm reports a refused or dropped connection as a 500; say what really happened.
        return f"could not reach the provider ({message})"
    return f"HTTP {status}: {message}" if isinstance(status, int) else message


def _connection_error() -> type[BaseException]:
    base: type[BaseException] = importlib.import_module("openai").APIConnectionError
    return base


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


def _key_advice(litellm: Any, model: str) -> str:
    """The next step for an auth failure: which key to set, or to check the one that is set."""
    try:
        missing = list(litellm.validate_environment(model=model).get("missing_keys") or [])
    except Exception:  # advice only; never let it hide the auth error itself
        missing = []
    if missing:
        return f"set {' and '.join(missing)} (in the environment or a .env next to canon.yaml)"
    provider = model.split("/", 1)[0].upper()
    return f"check that {provider}_API_KEY (or the provider's key) is valid for this model"


def _check_number(name: str, value: object, *, minimum: float, whole: bool = False) -> None:
    kinds = (int,) if whole else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or value < minimum:
        kind = "a whole number" if whole else "a number"
        raise UsageError(f"LiteLLMJudge {name} must be {kind} >= {minimum:g}, got {value!r}")
