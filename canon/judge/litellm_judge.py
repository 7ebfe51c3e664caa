"""LiteLLMJudge: asks a real model, through litellm or straight to an OpenAI-compatible endpoint.

litellm is imported on the first question, not on import, because it takes seconds to load
and ``canon --help`` or a MockJudge run must not pay for it. An ``openai/...`` model aimed at
an OpenAI-compatible endpoint of one's own (``api_base`` or ``OPENAI_BASE_URL``) is asked
directly over httpx instead (``transport``), which costs a fraction of litellm's client CPU;
every other provider goes through litellm.

Failures are sorted by what can fix them (see docs/judge.md for the exit codes):

- a missing or refused credential, an unknown model, a model that never follows the answer
  format: a setting must change, so the run stops at once (exit 2) with what to change;
- timeouts, refused connections, 429 and 5xx: retried here with backoff (litellm's and the
  SDK's own retries are off), honouring Retry-After, then *unavailable* (exit 3, CI may
  retry); the run's limiter (canon.judge.concurrency) hears of each, shrinks its in-flight
  limit, and trips its breaker when the judge keeps failing;
- a reply that names no offered choice: retried, then a JudgeError for that question (an
  unscored cell, never a pass).

The reply is asked as JSON under a schema whose enum is the offered labels where the
endpoint supports it (``structured_output``), and with ``logprobs`` the answer distribution
comes from the labels' token probabilities (canon.judge.answer_formats).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import random
import re
import time
from dataclasses import dataclass
from typing import Any, Literal

from canon.core.prompt import ANSWER_TAG, parse_reply, render_prompt
from canon.core.rubric import Question
from canon.core.scoring import Answer
from canon.errors import (
    ConfigError,
    JudgeCredentialError,
    JudgeError,
    JudgeFormatError,
    JudgeUnavailableError,
    UsageError,
)
from canon.judge.answer_formats import (
    Token,
    answer_schema,
    logprob_distribution,
    looks_structured,
    read_structured,
    tokens_from,
)
from canon.judge.base import JudgeRequest
from canon.judge.concurrency import current_limiter
from canon.judge.prompt_cache import mark_shared_prefix
from canon.judge.usage import attach_usage, note_raw_response, note_response, open_meter

PIP_LINE = 'pip install "litellm>=1.40"'
_RATIONALE_LIMIT = 1000
# litellm prefixes messages with its class names ("litellm.RateLimitError: RateLimitError:
# OpenAIException - slow down"); the reader needs only the provider's words.
_LITELLM_PREFIX = re.compile(r"^(?:litellm\.\w+:\s*)?(?:\w+:\s*)?(?:\w*Exception\s*-\s*)?")
_FORMAT_HINT = (
    "set judge_options: constrain_answers: true (llama.cpp servers) or structured_output: "
    "true, or choose a model that follows instructions"
)

# Questions with only unreadable replies, and none readable yet, before the run stops.
FORMAT_STRIKES = 3

FailureKind = Literal["transient", "malformed", "unparseable"]
Transport = Literal["auto", "litellm", "direct"]
_TRANSPORTS = ("auto", "litellm", "direct")


class JudgeSetupError(ConfigError):
    """The model judge cannot be set up here (litellm missing, or an unknown provider)."""


@dataclass(frozen=True, slots=True)
class _Failure:
    """One failed attempt that a retry might fix."""

    kind: FailureKind
    detail: str
    retry_after: float | None = None
    overload: bool = False  # a 429, 503 or timeout: the endpoint wants fewer calls


@dataclass(frozen=True, slots=True)
class _Reply:
    """One sampled reply: its text and, with logprobs on, its tokens."""

    text: str
    tokens: tuple[Token, ...] = ()


@dataclass(frozen=True, slots=True)
class _Completion:
    """The replies of one request and its ``usage`` (token counts) as the endpoint sent it."""

    replies: list[_Reply]
    usage: dict[str, Any] | None = None


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
        logprobs: bool = False,
        structured_output: bool | Literal["auto"] = "auto",
        transport: Transport = "auto",
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
        if not isinstance(logprobs, bool):
            raise UsageError(f"LiteLLMJudge logprobs must be true or false, got {logprobs!r}")
        if structured_output not in (True, False, "auto"):
            raise UsageError(
                "LiteLLMJudge structured_output must be true, false or auto, "
                f"got {structured_output!r}"
            )
        if transport not in _TRANSPORTS:
            raise UsageError(
                f"LiteLLMJudge transport must be one of {', '.join(_TRANSPORTS)}, got {transport!r}"
            )
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
        self.logprobs = logprobs
        self.structured_output = structured_output
        self.transport = transport
        self._ready = False
        self._direct: Any = None  # a canon.judge.openai_http.DirectOpenAI when used
        self._structured = False  # decided on the first question
        # Set when a question just used up its attempts on a transient failure; until a call
        # succeeds again, other questions try once instead of waiting out the full backoff,
        # so an outage costs one backoff cycle per run rather than one per question.
        self._outage = False
        # A refused key stays refused for the run: later questions fail without a request.
        self._refusal: str | None = None
        self._readable = False  # some reply named a choice: the model follows the format
        self._unreadable = 0  # questions that used up their attempts on unreadable replies

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
            "logprobs": self.logprobs,
            "structured_output": self.structured_output,
        }

    async def answer(self, request: JudgeRequest) -> Answer:
        """Ask the model, retrying what a retry can fix; the distribution is label frequency."""
        self._prepare()
        if self._refusal is not None:
            raise JudgeCredentialError(self._refusal)
        question = request.question
        messages = render_prompt(
            question,
            request.artifact.text,
            request.constitution,
            request.instructions,
            request.variant,
        ).as_messages()
        if self._direct is None:  # OpenAI-compatible endpoints cache without markers
            messages = mark_shared_prefix(
                load_litellm(), self.model, messages, request.prefix_shares
            )
        temperature = self.temperature
        if request.variant > 0:
            temperature = max(temperature, self.reask_temperature)
        limiter = current_limiter()
        failure = _Failure("transient", "no attempt was made")
        meter = open_meter()  # every response below is counted, failed attempts included
        budget = 1 if self._outage else self.max_attempts
        attempt = 0
        while attempt < budget:
            attempt += 1
            started = time.monotonic()
            try:
                completion = await self._sample(messages, question, request.variant, temperature)
            except Exception as exc:
                failure = self._classify(exc)
                if failure.kind == "transient" and limiter is not None:
                    if failure.overload:
                        limiter.overloaded(started, failure.retry_after)
                    limiter.failed(outage_window=2.0 * self.timeout)
            else:
                if limiter is not None:
                    limiter.succeeded(started, self.timeout)
                if self._outage:  # the provider answers again: back to the full budget
                    self._outage, budget = False, self.max_attempts
                tallied = self._tally(question, completion.replies)
                if isinstance(tallied, Answer):
                    return attach_usage(tallied, meter)
                failure = tallied
            if attempt < budget:
                delay = self._delay(attempt, failure.retry_after)
                if limiter is not None:
                    await limiter.pause(delay)  # a slot is not held while backing off
                else:
                    await asyncio.sleep(delay)
        attempts = f"after {budget} attempt(s)"
        if failure.kind == "transient":
            self._outage = True
            raise JudgeUnavailableError(
                f"judge {self.model} is unavailable {attempts}: {failure.detail}; check the "
                "network and the provider's status, then run again (CI may simply retry)"
            )
        if failure.kind == "unparseable":
            self._unreadable += 1
            # One unreadable question may be bad luck; several with no readable reply at all
            # mean the model does not follow the format, and every question would fail.
            if not self._readable and self._unreadable >= FORMAT_STRIKES:
                raise JudgeFormatError(
                    f"judge {self.model} answers but ignores the answer format ({attempts}: "
                    f"{failure.detail}); {_FORMAT_HINT}"
                )
            raise JudgeError(f"judge {self.model}, {attempts}: {failure.detail}")
        raise JudgeError(f"judge {self.model}, {attempts}: {failure.detail}")

    def _prepare(self) -> None:
        """Once per judge: check the provider and the credential, and pick the transport."""
        if self._ready:
            return
        base = (
            self.api_base or os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE")
        )
        is_openai = self.model.startswith("openai/")
        direct = self.transport == "direct" or (
            self.transport == "auto" and is_openai and base is not None
        )
        if direct:
            if not is_openai:
                raise JudgeSetupError(
                    f"judge_options: transport: direct needs an openai/... model (an "
                    f"OpenAI-compatible endpoint), not {self.model!r}"
                )
            from canon.judge.openai_http import DirectOpenAI  # httpx: only when used

            key = self.api_key or os.environ.get("OPENAI_API_KEY")
            self._direct = DirectOpenAI(base or "https://api.openai.com/v1", key, self.timeout)
            if key is None and base is None:
                self._refuse_missing(["OPENAI_API_KEY"])
            self._structured = self.structured_output is not False
        else:
            litellm = load_litellm()
            self._check_provider(litellm)
            if self.api_key is None and self.api_base is None:
                self._refuse_missing(_missing_api_keys(litellm, self.model))
            supported = self.structured_output is True or (
                self.structured_output == "auto" and _supports_schema(litellm, self.model)
            )
            self._structured = supported
        if self.constrain_answers:
            self._structured = False  # the grammar already fixes the reply's form
        self._ready = True

    def _refuse_missing(self, missing: list[str]) -> None:
        if missing:
            raise JudgeCredentialError(
                f"judge {self.model} needs {' and '.join(missing)}, which is not set; set it "
                "in the environment or in a .env file next to canon.yaml"
            )

    async def _sample(
        self, messages: list[dict[str, str]], question: Question, variant: int, temperature: float
    ) -> _Completion:
        """``samples`` replies: one request asking for n, topped up if the provider gave fewer."""
        body = self._body(messages, question, variant, temperature)
        completion = await self._complete(body, self.samples)
        replies = list(completion.replies)
        while len(replies) < self.samples:  # the provider ignored ``n``
            replies.extend((await self._complete(body, 1)).replies)
        return _Completion(replies[: self.samples], completion.usage)

    def _body(
        self, messages: list[dict[str, str]], question: Question, variant: int, temperature: float
    ) -> dict[str, Any]:
        """The OpenAI-style request fields, shared by both transports."""
        body: dict[str, Any] = {"messages": messages, "temperature": temperature}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.constrain_answers:
            body["grammar"] = answer_grammar(question)
        if self._structured:
            body["response_format"] = answer_schema(question, variant)
        if self.logprobs:
            body["logprobs"] = True
            # Enough alternatives to see every offered label, as llama.cpp and OpenAI allow.
            body["top_logprobs"] = min(20, max(5, 2 * len(question.choices)))
        return body

    async def _complete(self, fields: dict[str, Any], n: int) -> _Completion:
        try:
            return await self._request(fields, n)
        except Exception as exc:
            if not (self._structured and _refuses_schema(exc)):
                raise
        # The endpoint does not take a JSON schema: ask in text for the rest of the run.
        self._structured = False
        fields = {k: v for k, v in fields.items() if k != "response_format"}
        return await self._request(fields, n)

    async def _request(self, fields: dict[str, Any], n: int) -> _Completion:
        body = dict(fields)
        if n > 1:
            body["n"] = n
        # A backstop in case a transport ignores its timeout (e.g. a stalled stream).
        async with asyncio.timeout(self.timeout + 1.0):
            if self._direct is not None:
                body["model"] = self.model.split("/", 1)[1]
                data = await self._direct.complete(body)
                note_raw_response(self.model, data)  # priced without importing litellm
                return _from_json(data)
            return _from_litellm(await self._litellm_call(body))

    async def _litellm_call(self, body: dict[str, Any]) -> Any:
        litellm = load_litellm()
        extra = {"grammar": body.pop("grammar")} if "grammar" in body else None
        options: dict[str, Any] = {
            **body,
            "model": self.model,
            "timeout": self.timeout,
            "max_retries": 0,  # the retry policy lives here, not in the provider SDK
            "drop_params": True,  # providers without ``n`` or ``temperature`` just ignore them
        }
        if self.api_base is not None:
            options["api_base"] = self.api_base
        if self.api_key is not None:
            options["api_key"] = self.api_key
        if extra is not None:
            options["extra_body"] = extra
        response = await litellm.acompletion(**options)
        note_response(litellm, self.model, response)
        return response

    def _tally(self, question: Question, replies: list[_Reply]) -> Answer | _Failure:
        """Turn replies into an answer (mean of per-sample distributions), or the failure."""
        shares: list[dict[str, float]] = []
        problem = ""
        for reply in replies:
            try:
                shares.append(self._read(question, reply))
            except JudgeError as exc:
                problem = str(exc)
        if not shares:
            return _Failure("unparseable", problem or f"question {question.id}: no reply")
        self._readable = True
        total: dict[str, float] = {}
        for share in shares:
            for label, mass in share.items():
                total[label] = total.get(label, 0.0) + mass / len(shares)
        distribution = {label: total[label] for label in sorted(total)}
        texts = [reply.text for reply in replies]
        rationale = texts[0].strip()[:_RATIONALE_LIMIT] if len(shares) == len(texts) else None
        if len(shares) < self.samples:
            rationale = (
                f"{self.samples - len(shares)} of {self.samples} samples were unreadable "
                "and ignored"
            )
        return Answer(distribution=distribution, rationale=rationale)

    def _read(self, question: Question, reply: _Reply) -> dict[str, float]:
        """One reply's distribution: its label, or the labels' probabilities with logprobs."""
        structured = self._structured and looks_structured(reply.text)
        if structured:
            found = read_structured(question, reply.text)
            if found is None:
                raise JudgeError(
                    f"question {question.id}: the judge's JSON reply names none of "
                    f"{', '.join(c.label for c in question.choices)}; got "
                    f"{' '.join(reply.text.split())[:160]!r}"
                )
            choice = found
        else:
            choice = parse_reply(question, reply.text)
        if self.logprobs and reply.tokens:
            spread = logprob_distribution(question, reply.tokens, choice, structured)
            if spread is not None:
                return spread
        return {choice.label: 1.0}

    def _check_provider(self, litellm: Any) -> None:
        """Refuse a provider litellm does not know, as bad config rather than n failures."""
        try:
            litellm.get_llm_provider(model=self.model, api_base=self.api_base)
        except Exception as exc:
            raise JudgeSetupError(
                f"judge model {self.model!r}: litellm does not recognise the provider "
                f"{self.model.split('/', 1)[0]!r}; set judge_model to provider:model with a "
                "provider from https://docs.litellm.ai/docs/providers"
            ) from exc

    def _classify(self, exc: Exception) -> _Failure:
        """Sort one failed call: return what a retry may fix, raise what it cannot."""
        if isinstance(exc, TimeoutError):  # asyncio's, and the direct transport's
            return _Failure("transient", f"no reply within {self.timeout:g} s", overload=True)
        if self._direct is not None:
            return self._classify_direct(exc)
        litellm = load_litellm()
        if isinstance(exc, litellm.Timeout):
            return _Failure("transient", f"no reply within {self.timeout:g} s", overload=True)
        if not isinstance(exc, _provider_error()):
            raise exc  # a bug, not a provider failure: let it surface with its traceback
        status = getattr(exc, "status_code", None)
        detail = _describe(exc, status)
        if _caused_by(exc, json.JSONDecodeError):
            return _Failure("malformed", f"the provider sent a malformed reply ({detail})")
        if status in (401, 403) or isinstance(
            exc, litellm.AuthenticationError | litellm.PermissionDeniedError
        ):
            self._refused(detail, _key_advice(litellm, self.model, self.api_key))
        if status == 404 or isinstance(exc, litellm.NotFoundError):
            raise self._not_found(detail) from exc
        if "missing credentials" in detail.lower() or "api_key client option" in detail:
            # The SDK refuses to send without a key: a missing credential, not an outage.
            self._refused(detail, _key_advice(litellm, self.model, self.api_key))
        if status in (408, 409, 429) or (isinstance(status, int) and status >= 500):
            return _Failure("transient", detail, _retry_after(exc), status in (429, 503))
        if isinstance(exc, litellm.APIConnectionError):
            return _Failure("transient", detail, _retry_after(exc))
        # 400/422 and the like: this request cannot succeed as sent; the question goes unscored.
        raise JudgeError(f"judge {self.model} rejected the request ({detail})") from exc

    def _classify_direct(self, exc: Exception) -> _Failure:
        from canon.judge.openai_http import EndpointError, EndpointUnreachable, MalformedReply

        if isinstance(exc, EndpointUnreachable):
            return _Failure("transient", f"could not reach the provider ({exc})")
        if isinstance(exc, MalformedReply):
            return _Failure("malformed", f"the provider sent a malformed reply ({exc})")
        if not isinstance(exc, EndpointError):
            raise exc  # a bug: let it surface with its traceback
        detail = str(exc)
        if exc.status in (401, 403):
            advice = (
                "set OPENAI_API_KEY to a valid key (in the environment or a .env next to "
                "canon.yaml)"
                if self.api_key is None
                else "check judge_options: api_key in canon.yaml"
            )
            self._refused(detail, advice)
        if exc.status == 404:
            raise self._not_found(detail) from exc
        if exc.status in (408, 409, 429) or exc.status >= 500:
            return _Failure("transient", detail, exc.retry_after, exc.status in (429, 503))
        raise JudgeError(f"judge {self.model} rejected the request ({detail})") from exc

    def _refused(self, detail: str, advice: str) -> None:
        self._refusal = f"judge {self.model} refused the credentials ({detail}); {advice}"
        raise JudgeCredentialError(self._refusal)

    def _not_found(self, detail: str) -> JudgeSetupError:
        return JudgeSetupError(
            f"judge {self.model} was not found by the provider ({detail}); check the model "
            "name in judge_model and that your account can use it"
        )

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


def _from_json(data: dict[str, Any]) -> _Completion:
    """Replies from an OpenAI-style JSON completion (the direct transport's)."""
    replies = []
    for choice in data["choices"]:
        message = choice.get("message") if isinstance(choice, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        logprobs = choice.get("logprobs") if isinstance(choice, dict) else None
        replies.append(
            _Reply(content if isinstance(content, str) else "", tuple(tokens_from(logprobs)))
        )
    usage = data.get("usage")
    return _Completion(replies, usage if isinstance(usage, dict) else None)


def _from_litellm(response: Any) -> _Completion:
    """Replies from litellm's response object."""
    replies = []
    for choice in response.choices:
        content = getattr(getattr(choice, "message", None), "content", None)
        logprobs = getattr(choice, "logprobs", None)
        replies.append(
            _Reply(content if isinstance(content, str) else "", tuple(tokens_from(logprobs)))
        )
    usage = getattr(response, "usage", None)
    dump = getattr(usage, "model_dump", None)
    as_dict = dump() if callable(dump) else usage
    return _Completion(replies, as_dict if isinstance(as_dict, dict) else None)


def _refuses_schema(exc: Exception) -> bool:
    """Whether a failed call says the endpoint does not take ``response_format``."""
    status = getattr(exc, "status", getattr(exc, "status_code", None))
    text = str(exc).lower()
    return status in (400, 422) and any(
        word in text for word in ("response_format", "json_schema", "schema")
    )


def _supports_schema(litellm: Any, model: str) -> bool:
    try:
        return bool(litellm.supports_response_schema(model=model))
    except Exception:  # unknown to litellm's model list: ask in text
        return False


def _missing_api_keys(litellm: Any, model: str) -> list[str]:
    """The unset ``*_API_KEY`` variables a hosted model needs, checked before any call.

    Only API keys: other names litellm lists can be supplied otherwise (Ollama's default
    address, AWS and Google credentials from their own config, Azure AD tokens), and refusing
    those up front would stop judges that work.
    """
    if model.split("/", 1)[0] in ("azure", "azure_ai"):
        return []
    return [name for name in _missing_keys(litellm, model) if name.endswith("_API_KEY")]


def _missing_keys(litellm: Any, model: str) -> list[str]:
    try:
        return list(litellm.validate_environment(model=model).get("missing_keys") or [])
    except Exception:  # advice only; the first call will tell
        return []


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


def _key_advice(litellm: Any, model: str, api_key: str | None) -> str:
    """The next step for an auth failure: which key to set, or to check the one that is set."""
    if api_key is not None:
        return "check judge_options: api_key in canon.yaml"
    missing = _missing_keys(litellm, model)
    if missing:
        return f"set {' and '.join(missing)} (in the environment or a .env next to canon.yaml)"
    provider = model.split("/", 1)[0].upper()
    return (
        f"check that {provider}_API_KEY (or the provider's key) is valid for this model "
        "(in the environment or a .env next to canon.yaml)"
    )


def _check_number(name: str, value: object, *, minimum: float, whole: bool = False) -> None:
    kinds = (int,) if whole else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or value < minimum:
        kind = "a whole number" if whole else "a number"
        raise UsageError(f"LiteLLMJudge {name} must be {kind} >= {minimum:g}, got {value!r}")
