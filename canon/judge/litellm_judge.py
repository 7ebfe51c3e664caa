"""LiteLLMJudge: asks a real model, through litellm or straight to an OpenAI-compatible endpoint.

litellm is imported on the first question (canon.judge.litellm_module). An ``openai/...``
model aimed at an OpenAI-compatible endpoint of one's own (``api_base`` or ``OPENAI_BASE_URL``)
is asked directly over httpx instead (``transport``), which costs a fraction of litellm's client
CPU; every other provider goes through litellm.

Failures are sorted by what can fix them (see docs/judge.md for the exit codes):

- a missing or refused credential, an unknown model, a model that never follows the answer
  format: a setting must change, so the run stops at once (exit 2) with what to change;
- timeouts, refused connections, 429 and 5xx: retried here with backoff (litellm's and the
  SDK's own retries are off), honouring Retry-After, then *unavailable* (exit 3, CI may
  retry); the run's limiter (canon.judge.concurrency) hears of each, shrinks its in-flight
  limit, and trips its breaker when the judge keeps failing;
- a reply that names no offered choice: retried, then a JudgeError for that question (an
  unscored cell, never a pass); a refusal to judge is a JudgeRefusedError at once.

The reply is asked as JSON under a schema whose enum is the offered labels where the
endpoint supports it (``structured_output``), and with ``logprobs`` the answer distribution
comes from the labels' token probabilities (canon.judge.answer_formats). Both default to
``auto``: asked for where litellm says the model takes them (any OpenAI-compatible endpoint
on the direct path), and dropped for the rest of the run if the endpoint refuses them. The
probabilities cost nothing and show a judge that is split about an answer in one look, where
a label alone would look as sure as any other. A judge that reads labels alone instead samples
(``samples: auto``): three answers an ask at the re-ask temperature, their shares the
distribution, so a judge split about an answer shows it there too. The request is built
in canon.judge.request_body, failures are sorted in canon.judge.failures, and replies are read
in canon.judge.replies.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from typing import Any, Literal

from canon.core.rubric import Question
from canon.core.scoring import Answer
from canon.core.usage import Usage, total
from canon.errors import (
    JudgeCredentialError,
    JudgeError,
    JudgeFormatError,
    JudgeRefusedError,
    JudgeUnavailableError,
    UsageError,
)
from canon.judge import notices
from canon.judge.base import JudgeRequest, request_prompt
from canon.judge.concurrency import AdaptiveLimiter, current_limiter
from canon.judge.failures import (
    Failure,
    JudgeTimeoutError,
    classify_direct,
    classify_litellm,
    refuses_logprobs,
    refuses_n,
    refuses_schema,
    timed_out,
)
from canon.judge.litellm_module import (
    JudgeSetupError,
    load_litellm,
    missing_api_keys,
    supports_logprobs,
    supports_n,
    supports_schema,
)
from canon.judge.prompt_cache import mark_shared_prefix
from canon.judge.replies import (
    Completion,
    completion_from_json,
    completion_from_litellm,
    tally,
)
from canon.judge.request_body import request_body
from canon.judge.usage import (
    SpendGuard,
    attach_usage,
    context_window,
    count_prompt_tokens,
    note_raw_response,
    note_response,
    open_meter,
)

_FORMAT_HINT = (
    "set judge_options: constrain_answers: true (llama.cpp servers) or structured_output: "
    "true, or choose a model that follows instructions"
)

# Questions with only unreadable replies, and none readable yet, before the run stops.
FORMAT_STRIKES = 3

# Answers an ask of ``samples: auto`` when the judge reads labels alone. One label shows
# nothing of a judge split about it: a judge at 50/50 on a changed reply reads it as fine in
# every look one time in eight at one look each, and in one time in 500 at three samples
# (bench_deterministic_evidence, coin and coin-s3).
AUTO_SAMPLES = 3

Transport = Literal["auto", "litellm", "direct"]
_TRANSPORTS = ("auto", "litellm", "direct")


class LiteLLMJudge:
    """A judge backed by any litellm model (``provider/model``), with retries and sampling."""

    def __init__(
        self,
        model: str,
        *,
        samples: int | Literal["auto"] = "auto",
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
        logprobs: bool | Literal["auto"] = "auto",
        structured_output: bool | Literal["auto"] = "auto",
        transport: Transport = "auto",
        reasons: bool = True,
    ) -> None:
        if not isinstance(model, str) or "/" not in model.strip("/"):
            raise UsageError(f"LiteLLMJudge model must look like provider/model, got {model!r}")
        if samples != "auto":
            _check_number("samples", samples, minimum=1, whole=True)
        _check_number("max_attempts", max_attempts, minimum=1, whole=True)
        _check_number("timeout", timeout, minimum=0.001)
        _check_number("temperature", temperature, minimum=0.0)
        _check_number("reask_temperature", reask_temperature, minimum=0.0)
        _check_number("backoff", backoff, minimum=0.0)
        _check_number("max_backoff", max_backoff, minimum=0.0)
        if not isinstance(reasons, bool):
            raise UsageError(f"LiteLLMJudge reasons must be true or false, got {reasons!r}")
        if logprobs not in (True, False, "auto") or not isinstance(logprobs, bool | str):
            raise UsageError(f"LiteLLMJudge logprobs must be true, false or auto, got {logprobs!r}")
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
        # The setting: a number, or "auto" (one answer when it reads log-probabilities, else
        # AUTO_SAMPLES); ``samples`` is what it comes to.
        self.sampling: int | Literal["auto"] = samples
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
        self.reasons = reasons  # structured replies carry a reason before the answer
        self._ready = False
        self._direct: Any = None  # a canon.judge.openai_http.DirectOpenAI when used
        self._structured = False  # decided on the first question
        self._logprobs = False  # decided on the first question
        self._one_a_request = False  # the endpoint refused ``n``: each sample is a request
        # Set when a question just used up its attempts on a transient failure; until a call
        # succeeds again, other questions try once instead of waiting out the full backoff,
        # so an outage costs one backoff cycle per run rather than one per question.
        self._outage = False
        # A refused key stays refused for the run: later questions fail without a request.
        self._refusal: str | None = None
        self._readable = False  # some reply named a choice: the model follows the format
        # Set by a budget (canon.check.spend.BudgetJudge): asked before every request.
        self.spend_guard: SpendGuard | None = None
        self._unreadable = 0  # questions that used up their attempts on unreadable replies
        self._sized: set[str] = set()  # artifacts whose length was held against the window

    @property
    def name(self) -> str:
        """The litellm model string, as recorded in baselines."""
        return self.model

    def __repr__(self) -> str:
        return f"LiteLLMJudge({self.model!r}, samples={self.sampling!r})"

    @property
    def deterministic(self) -> bool:
        """Whether a re-ask replays the first answer: both temperatures are 0, so asking the
        same prompt again is no new evidence (canon.judge.base.is_deterministic)."""
        return max(self.temperature, self.reask_temperature) == 0.0

    @property
    def samples(self) -> int:
        """Answers asked for per ask: the setting, or for ``auto`` one where the answer is
        read from log-probabilities (or a re-ask would replay it: both temperatures 0) and
        AUTO_SAMPLES where it is read from labels alone. Before the first call this may ask
        litellm's tables whether the model gives log-probabilities (looked up once)."""
        if self.sampling != "auto":
            return self.sampling
        if self.deterministic or self.reads_probabilities:
            return 1
        return AUTO_SAMPLES

    @property
    def sampled_by_default(self) -> bool:
        """Whether ``samples: auto`` comes to several answers an ask (asked at the re-ask
        temperature, since at temperature 0 they would be one answer)."""
        return self.sampling == "auto" and self.samples > 1

    def sample_as(self, count: int) -> None:
        """Ask ``count`` answers an ask from now on, when ``samples`` is ``auto``: a check
        against a baseline sampled so (canon.check.provenance.read_as_recorded)."""
        if self.sampling == "auto":
            self.sampling = count

    @property
    def reads_probabilities(self) -> bool:
        """Whether answers are read from log-probabilities: as this run did (a refusal turns
        ``auto`` off), or, before the first call, as it would."""
        if self._ready:
            return self._logprobs
        return self._asks_logprobs(self._goes_direct(self._endpoint()))

    def _endpoint(self) -> str | None:
        """The OpenAI-compatible endpoint set for this judge, if any."""
        return (
            self.api_base or os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE")
        )

    def _goes_direct(self, base: str | None) -> bool:
        """Whether calls take the direct path (an ``openai/`` model at an endpoint of one's
        own, or ``transport: direct``) rather than litellm."""
        return self.transport == "direct" or (
            self.transport == "auto" and self.model.startswith("openai/") and base is not None
        )

    def _asks_logprobs(self, direct: bool) -> bool:
        """Whether the path taken asks for log-probabilities (before any refusal): ``auto``
        asks any OpenAI-compatible endpoint on the direct path, and through litellm where
        litellm says the provider takes them."""
        if self.logprobs != "auto":
            return self.logprobs is True
        return direct or supports_logprobs(self.model)

    @property
    def takes_n(self) -> bool:
        """Whether one request gives all of an ask's samples (``n``): assumed of an
        OpenAI-compatible endpoint on the direct path, else as litellm's tables say."""
        return self._goes_direct(self._endpoint()) or supports_n(self.model)

    def read_labels(self) -> None:
        """Read answers from labels alone from now on, when ``logprobs`` is ``auto``: a
        check against a baseline judged so (canon.check.provenance.read_as_recorded)."""
        if self.logprobs == "auto":
            self.logprobs = False
            self._logprobs = False

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
            # the setting, not what it comes to: knowing may mean importing litellm
            "samples": self.sampling,
            "temperature": self.temperature,
            "reask_temperature": self.reask_temperature,
            "max_tokens": self.max_tokens,
            "constrain_answers": self.constrain_answers,
            "api_base": self.api_base,
            "endpoints": endpoints,
            "logprobs": self.logprobs,
            "structured_output": self.structured_output,
            "reasons": self.reasons,
        }

    async def answer(self, request: JudgeRequest) -> Answer:
        """Ask the model, retrying what a retry can fix; the distribution is label frequency."""
        self._prepare()
        if self._refusal is not None:
            raise JudgeCredentialError(self._refusal)
        question = request.question
        fields = self.request_fields(request)
        limiter = current_limiter()
        failure = Failure("transient", "no attempt was made")
        meter = open_meter()  # every response below is counted, failed attempts included
        budget = 1 if self._outage else self.max_attempts
        attempt = 0
        while attempt < budget:
            attempt += 1
            started = time.monotonic()
            try:
                completion = await self._sample(fields)
            except Exception as exc:
                failure = self._classify(exc)
                if failure.kind == "transient" and limiter is not None:
                    if failure.overload:
                        limiter.overloaded(started, failure.retry_after)
                    limiter.failed(2.0 * self.timeout, failure.detail)
            else:
                if limiter is not None:
                    limiter.succeeded(started, self.timeout)
                if self._outage:  # the provider answers again: back to the full budget
                    self._outage, budget = False, self.max_attempts
                if not completion.replies:
                    failure = Failure(
                        "malformed",
                        "the endpoint's reply held no choices",
                        cause=notices.FailureCause.MALFORMED,
                    )
                    if attempt < budget:
                        await self._back_off(attempt, budget, failure, limiter)
                    continue
                tallied = self.read_completion(question, completion)
                if isinstance(tallied, Answer):
                    self._readable = True
                    return attach_usage(tallied, meter)
                failure = tallied
                if failure.kind == "refused":  # the model's own decision: a retry repeats it
                    break
            if attempt < budget:
                await self._back_off(attempt, budget, failure, limiter)
        error = self._gave_up(failure, budget)
        if isinstance(error, JudgeError):
            error.usage = total(meter)  # an unscored question still counts the calls it made
        raise error

    async def _back_off(
        self, attempt: int, budget: int, failure: Failure, limiter: AdaptiveLimiter | None
    ) -> None:
        delay = self._delay(attempt, failure.retry_after)
        if failure.cause is not None:  # the endpoint failed (not an unreadable answer): say so
            notices.backoff(self.model, failure.cause, failure.status, delay, attempt, budget)
        if limiter is not None:
            await limiter.pause(delay)  # a slot is not held while backing off
        else:
            await asyncio.sleep(delay)

    def _gave_up(self, failure: Failure, budget: int) -> JudgeError | JudgeFormatError:
        """The error for a question whose attempts are used up, by what went wrong."""
        attempts = f"after {budget} attempt(s)"
        if failure.kind == "refused":
            return JudgeRefusedError(f"judge {self.model}: {failure.detail}")
        if failure.kind == "transient":
            self._outage = True
            if failure.cause is notices.FailureCause.TIMEOUT:
                return JudgeTimeoutError(
                    f"judge {self.model} timed out {attempts}: no reply within "
                    f"{self.timeout:g} s; raise judge_options: timeout if the model is slow, or "
                    "check the network and the provider's status, then run again"
                )
            return JudgeUnavailableError(
                f"judge {self.model} is unavailable {attempts}: {failure.detail}; check the "
                "network and the provider's status, then run again (CI may simply retry)"
            )
        if failure.kind == "unparseable":
            self._unreadable += 1
            # One unreadable question may be bad luck; several with no readable reply at all
            # mean the model does not follow the format, and every question would fail.
            if not self._readable and self._unreadable >= FORMAT_STRIKES:
                return JudgeFormatError(
                    f"judge {self.model} answers but ignores the answer format ({attempts}: "
                    f"{failure.detail}); {_FORMAT_HINT}"
                )
        return JudgeError(f"judge {self.model}, {attempts}: {failure.detail}")

    def _prepare(self) -> None:
        """Once per judge: check the provider and the credential, and pick the transport."""
        if self._ready:
            return
        base = self._endpoint()
        direct = self._goes_direct(base)
        if direct:
            if not self.model.startswith("openai/"):
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
                self._refuse_missing(missing_api_keys(litellm, self.model))
            supported = self.structured_output is True or (
                self.structured_output == "auto" and supports_schema(self.model)
            )
            self._structured = supported
        self._logprobs = self._asks_logprobs(direct)
        if self.constrain_answers:
            self._structured = False  # the grammar already fixes the reply's form
        self._ready = True

    def _refuse_missing(self, missing: list[str]) -> None:
        if missing:
            raise JudgeCredentialError(
                f"judge {self.model} needs {' and '.join(missing)}, which is not set; set it "
                "in the environment or in a .env file next to canon.yaml"
            )

    def request_fields(self, request: JudgeRequest) -> dict[str, Any]:
        """What this judge sends for ``request``: the messages, the temperature and the
        answer format asked for (a JSON schema, log-probabilities, a grammar). The online
        path and batch mode both build their requests here, so a batch asks what an online
        run would."""
        self._prepare()
        messages = request_prompt(request).as_messages()
        self._check_length(request, messages)  # once per artifact, however it is sent
        if self._direct is None:  # OpenAI-compatible endpoints cache without markers
            messages = mark_shared_prefix(
                load_litellm(), self.model, messages, request.prefix_shares
            )
        temperature = self.temperature
        if request.variant > 0 or self.sampled_by_default:
            temperature = max(temperature, self.reask_temperature)
        return request_body(
            messages,
            request.question,
            request.variant,
            temperature,
            max_tokens=self.max_tokens,
            constrain_answers=self.constrain_answers,
            structured=self._structured,
            logprobs=self._logprobs,
            reasons=self.reasons,
        )

    def read_completion(self, question: Question, completion: Completion) -> Answer | Failure:
        """A completion's replies as this judge reads them (in the answer format it asked
        for): the answer, or why there is none. Online replies and batch results alike."""
        return tally(
            question,
            completion.replies,
            samples=self.samples,
            structured=self._structured,
            logprobs=self._logprobs,
        )

    async def _sample(self, body: dict[str, Any]) -> Completion:
        """``samples`` replies: one request asking for n, topped up if the provider gave fewer."""
        completion, body = await self._complete(body, self.samples)
        replies = list(completion.replies)
        count = self.samples  # more than asked when refused logprobs turned sampling on
        # The provider ignored ``n`` (or refused logprobs, so an ask for one became an ask
        # for several): ask for the rest, at most one request a missing answer, and stop at
        # the first request that brings nothing (an endpoint answering with no choices at
        # all would otherwise be asked forever, outside every limit).
        while replies and len(replies) < count:
            more = (await self._complete(body, count - len(replies)))[0].replies
            if not more:
                break
            replies.extend(more)
        return Completion(replies[:count], completion.usage)

    async def _complete(self, fields: dict[str, Any], n: int) -> tuple[Completion, dict[str, Any]]:
        """The completion, and the fields that got it (without what the endpoint refused)."""
        while True:
            try:
                return await self._request(fields, n), fields
            except Exception as exc:
                dropped = self._drop_refused(fields, exc, n)
                if dropped is None:
                    raise
                fields = dropped

    def _drop_refused(
        self, fields: dict[str, Any], exc: Exception, n: int
    ) -> dict[str, Any] | None:
        """The request without what the endpoint said it does not take, for the rest of the
        run: a JSON schema (asked in text instead), several answers a request (``n``: one a
        request instead, topped up), or log-probabilities that ``auto`` asked for (answered by
        label instead); None when the failure is not such a refusal."""
        if "response_format" in fields and refuses_schema(exc):
            self._structured = False
            return {k: v for k, v in fields.items() if k != "response_format"}
        if n > 1 and not self._one_a_request and refuses_n(exc):
            self._one_a_request = True  # the samples are asked one a request instead
            return fields
        if self.logprobs == "auto" and "logprobs" in fields and refuses_logprobs(exc):
            self._logprobs = False
            fields = {k: v for k, v in fields.items() if k not in ("logprobs", "top_logprobs")}
            if self.sampled_by_default:  # labels alone: ``samples: auto`` now samples
                fields["temperature"] = max(fields.get("temperature", 0.0), self.reask_temperature)
            return fields
        return None

    async def _request(self, fields: dict[str, Any], n: int) -> Completion:
        body = dict(fields)
        if n > 1 and not self._one_a_request:
            body["n"] = n
        guard = self.spend_guard
        # Every request, retries and top-ups included, reserves its cost first: a budget
        # can then be crossed by one call at most, never by a question's whole retry loop.
        reserved = guard.reserve(self.model, body["messages"], n) if guard is not None else 0.0
        spent: Usage | None = None
        try:
            # A backstop in case a transport ignores its timeout (e.g. a stalled stream).
            async with asyncio.timeout(self.timeout + 1.0):
                if self._direct is not None:
                    body["model"] = self.model.split("/", 1)[1]
                    data = await self._direct.complete(body)
                    spent = note_raw_response(self.model, data)  # priced without litellm
                    return completion_from_json(data)
                response, spent = await self._litellm_call(body)
                return completion_from_litellm(response)
        finally:
            if guard is not None:
                guard.book(reserved, spent)

    async def _litellm_call(self, body: dict[str, Any]) -> tuple[Any, Usage]:
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
        return response, note_response(litellm, self.model, response)

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

    def _classify(self, exc: Exception) -> Failure:
        """Sort one failed call; a refused credential stays refused for the rest of the run."""
        if isinstance(exc, TimeoutError):  # asyncio's, and the direct transport's
            return timed_out(self.timeout)
        try:
            if self._direct is not None:
                return classify_direct(exc, self.model, self.api_key)
            return classify_litellm(exc, self.model, self.api_key, self.timeout)
        except JudgeCredentialError as refused:
            self._refusal = str(refused)
            raise

    def _check_length(self, request: JudgeRequest, messages: list[dict[str, str]]) -> None:
        """Warn, once per artifact, when its request is longer than the model's window."""
        key = request.artifact.key
        if key in self._sized:
            return
        self._sized.add(key)
        window = context_window(self.model)
        if window is None:
            return
        size = sum(len(m["content"].encode("utf-8")) for m in messages)
        if size <= window:  # a token spans at least one byte: this request fits
            return
        if self._direct is None:  # litellm is loaded: count with the model's tokenizer
            tokens = count_prompt_tokens(load_litellm(), self.model, messages)
            approximate = False
        else:  # the direct path does not load litellm: about 4 bytes a token
            tokens, approximate = size // 4, True
        if tokens > window:
            notices.context_overflow(self.model, tokens, window, key, approximate)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        delay = self.backoff * 2.0 ** (attempt - 1) * (1.0 + 0.25 * random.random())
        if retry_after is not None:
            delay = max(delay, retry_after)
        return min(delay, self.max_backoff)


def _check_number(name: str, value: object, *, minimum: float, whole: bool = False) -> None:
    kinds = (int,) if whole else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or value < minimum:
        kind = "a whole number" if whole else "a number"
        raise UsageError(f"LiteLLMJudge {name} must be {kind} >= {minimum:g}, got {value!r}")
