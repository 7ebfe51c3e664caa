"""Provider batch mode: a run's questions go through the provider's Batch API, at its price.

The questions are written as one JSONL file (litellm's files API), submitted as a batch
(litellm's batches API) and waited for; each reply is read exactly as an online reply is,
and stored in the answer cache under the same key the online path uses. Scoring then runs as
usual and finds every batch answer in the cache; a question the batch did not answer (it
failed, the batch expired, the reply is unreadable) is simply not in the cache, so the run
asks it online — it is never taken for a pass.

The batch id is recorded in a small JSON file next to the answer cache the moment the
batch is created, so a run that is killed while it waits picks the same batch up again
instead of paying for the questions twice.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import io
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from canon.core.scoring import Answer
from canon.core.usage import Usage, total
from canon.errors import CacheError, JudgeUnavailableError
from canon.judge.base import JudgeRequest
from canon.judge.batch_state import read_state, state_path, write_state
from canon.judge.cache import AnswerCache, CachingJudge, IdentifiedJudge, answer_key
from canon.judge.litellm_judge import LiteLLMJudge
from canon.judge.litellm_module import load_litellm
from canon.judge.replies import completion_from_json
from canon.judge.usage import response_usage

# Providers whose batch input litellm passes through in OpenAI's JSONL request format.
BATCH_PROVIDERS = frozenset({"openai"})
MAX_REQUESTS_PER_BATCH = 50_000  # OpenAI's limit per batch
POLL_ENV = "CANON_BATCH_POLL_SECONDS"
DEFAULT_POLL_SECONDS = 15.0
_TERMINAL = frozenset({"completed", "expired", "failed", "cancelled"})
_POLL_ATTEMPTS = 3

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    """What batch mode did before scoring reads the answers back."""

    batches: tuple[str, ...]  # the provider's batch ids waited for
    resumed: int  # of those, batches an earlier invocation had submitted
    answered: int  # answers written into the cache
    unanswered: int  # questions the batch left for the online path
    usage: Mapping[str, Usage] = field(default_factory=dict)  # per cache key, batch price
    problems: tuple[str, ...] = ()  # why some questions were not answered (first few)

    def line(self) -> str:
        """One line for stderr."""
        spent = total(self.usage.values())
        from canon.core.usage import format_cost

        text = (
            f"batch: {self.answered} answer(s) from {len(self.batches)} batch(es)"
            f" ({self.resumed} resumed), cost {format_cost(spent.cost)} at the batch price"
        )
        if self.unanswered:
            first = f" (first: {self.problems[0]})" if self.problems else ""
            text += (
                f"; {self.unanswered} question(s) unanswered by the batch are asked online{first}"
            )
        return text


class PrepaidJudge(CachingJudge):
    """The answer cache after a batch filled it: batch answers carry the batch's usage.

    A batch answer is read back from the cache, but it was paid for in this run, so it is
    reported as a call at the batch price rather than as a cache hit.
    """

    def __init__(
        self, inner: IdentifiedJudge, cache: AnswerCache, prepaid: Mapping[str, Usage]
    ) -> None:
        super().__init__(inner, cache)
        self._prepaid = dict(prepaid)

    async def answer(self, request: JudgeRequest) -> Answer:
        """The cached answer, with the batch's usage the first time it is read."""
        answer = await super().answer(request)
        spent = self._prepaid.pop(answer_key(self._identity, request), None)
        if spent is None:
            return answer
        self.hits -= 1  # paid for by the batch, not reused from an earlier run
        return dataclasses.replace(answer, usage=spent)


def batch_unsupported(judge: LiteLLMJudge) -> str | None:
    """Why this judge's provider cannot be batched through litellm, or None if it can."""
    litellm = load_litellm()
    try:
        provider = litellm.get_llm_provider(model=judge.model, api_base=judge.api_base)[1]
    except Exception:
        provider = judge.model.split("/", 1)[0]
    if provider in BATCH_PROVIDERS:
        return None
    return (
        f"batch mode is not available for provider {provider!r} (Canon batches through "
        f"litellm for {', '.join(sorted(BATCH_PROVIDERS))}); asking online instead"
    )


async def run_batch(
    judge: LiteLLMJudge,
    cache: AnswerCache,
    requests: Sequence[tuple[str, JudgeRequest]],
    *,
    poll_seconds: float | None = None,
    on_progress: Progress | None = None,
) -> BatchOutcome:
    """Answer ``requests`` (cache key, request) through the provider's Batch API."""
    litellm = load_litellm()
    say = on_progress or (lambda _text: None)
    poll = poll_seconds if poll_seconds is not None else _poll_from_env()
    path = state_path(cache.path)
    identity = _identity_digest(judge)
    pending = {key: request for key, request in requests}
    entries = [e for e in read_state(path) if e["identity"] == identity]
    others = [e for e in read_state(path) if e["identity"] != identity]
    resumed = [e for e in entries if pending.keys() & set(e["keys"])]
    covered = {key for e in resumed for key in e["keys"]}
    fresh = [key for key in pending if key not in covered]
    kwargs = _connection(judge)
    model = litellm.get_llm_provider(model=judge.model, api_base=judge.api_base)[0]
    refused: str | None = None
    for start in range(0, len(fresh), MAX_REQUESTS_PER_BATCH):
        chunk = fresh[start : start + MAX_REQUESTS_PER_BATCH]
        lines = "".join(
            json.dumps(_line(judge, model, key, pending[key]), ensure_ascii=False) + "\n"
            for key in chunk
        )
        try:
            batch = await _submit(litellm, lines, kwargs)
        except Exception as exc:
            # The endpoint has no usable Batch API (or refused this one): the online path
            # asks these questions and reports its own failures properly.
            refused = f"the provider refused the batch ({_short(exc)})"
            say(f"batch: {refused}; asking those questions online")
            break
        entry = {"id": batch.id, "identity": identity, "keys": chunk, "created": time.time()}
        entries.append(entry)
        try:
            write_state(path, [*others, *entries])  # before waiting: a killed run can resume
        except CacheError as exc:
            raise CacheError(f"{exc}; batch {batch.id} was submitted but is not recorded") from None
        say(f"batch {batch.id}: submitted {len(chunk)} question(s)")
    for entry in resumed:
        say(f"batch {entry['id']}: resuming the batch an earlier run submitted")
    # a recorded batch none of whose questions is still pending has nothing left to give
    active = [e for e in entries if pending.keys() & set(e["keys"])]
    answered = 0
    problems: list[str] = []
    usage: dict[str, Usage] = {}
    for entry in active:
        batch = await _wait(litellm, entry["id"], kwargs, poll, say)
        got, failed = await _collect(litellm, judge, cache, batch, pending, kwargs)
        answered += len(got)
        usage.update(got)
        problems.extend(failed)
        entries = [e for e in entries if e["id"] != entry["id"]]
        write_state(path, [*others, *entries])
    write_state(path, others)  # what is left of ours answers nothing still pending
    unanswered = sum(1 for key in pending if key not in usage)
    if refused is not None:
        problems.insert(0, refused)
    return BatchOutcome(
        batches=tuple(e["id"] for e in active),
        resumed=len(resumed),
        answered=answered,
        unanswered=unanswered,
        usage=usage,
        problems=tuple(problems[:3]),
    )


async def _submit(litellm: Any, lines: str, kwargs: Mapping[str, Any]) -> Any:
    """Upload the JSONL requests and start a batch over them."""
    upload = await litellm.acreate_file(
        file=("canon-batch.jsonl", io.BytesIO(lines.encode("utf-8"))),
        purpose="batch",
        custom_llm_provider="openai",
        **kwargs,
    )
    return await litellm.acreate_batch(
        completion_window="24h",
        endpoint="/v1/chat/completions",
        input_file_id=upload.id,
        custom_llm_provider="openai",
        metadata={"created_by": "canon"},
        **kwargs,
    )


def _line(judge: LiteLLMJudge, model: str, key: str, request: JudgeRequest) -> dict[str, Any]:
    """One JSONL request, built by the judge exactly as its online call is
    (``LiteLLMJudge.request_fields``), with ``model`` as the provider names it."""
    body: dict[str, Any] = {"model": model, **judge.request_fields(request)}
    if judge.samples > 1:
        body["n"] = judge.samples
    return {"custom_id": key, "method": "POST", "url": "/v1/chat/completions", "body": body}


async def _wait(
    litellm: Any, batch_id: str, kwargs: Mapping[str, Any], poll: float, say: Progress
) -> Any:
    """Poll a batch until it ends, reporting progress whenever it changes."""
    last = ""
    failures = 0
    while True:
        try:
            batch = await litellm.aretrieve_batch(
                batch_id=batch_id, custom_llm_provider="openai", **kwargs
            )
        except Exception as exc:
            failures += 1  # a poll that fails once is no outage yet: the batch runs on
            if failures < _POLL_ATTEMPTS:
                await asyncio.sleep(poll)
                continue
            raise JudgeUnavailableError(
                f"cannot read batch {batch_id} from the provider ({_short(exc)}); run the "
                "command again to resume it (the batch id is kept)"
            ) from exc
        failures = 0
        counts = getattr(batch, "request_counts", None)
        done = getattr(counts, "completed", 0) or 0
        failed = getattr(counts, "failed", 0) or 0
        whole = getattr(counts, "total", 0) or 0
        status = str(batch.status)
        report = f"batch {batch_id}: {status}, {done} of {whole} done, {failed} failed"
        if report != last:
            say(report)
            last = report
        if status in _TERMINAL:
            return batch
        await asyncio.sleep(poll)


async def _collect(
    litellm: Any,
    judge: LiteLLMJudge,
    cache: AnswerCache,
    batch: Any,
    pending: Mapping[str, JudgeRequest],
    kwargs: Mapping[str, Any],
) -> tuple[dict[str, Usage], list[str]]:
    """Store the batch's readable answers; return their usage and why others failed."""
    got: dict[str, Usage] = {}
    problems: list[str] = []
    if batch.status != "completed":
        problems.append(f"batch {batch.id} ended {batch.status}")
    for file_id in (batch.output_file_id, batch.error_file_id):
        if not file_id:
            continue
        for record in await _records(litellm, file_id, kwargs):
            key = record.get("custom_id")
            if not isinstance(key, str) or key not in pending:
                continue
            outcome = _answer(litellm, judge, pending[key], record)
            if isinstance(outcome, str):
                problems.append(f"{pending[key].question.id}: {outcome}")
                continue
            answer, spent = outcome
            cache.put(key, answer)
            got[key] = spent
    return got, problems


async def _records(litellm: Any, file_id: str, kwargs: Mapping[str, Any]) -> list[dict[str, Any]]:
    try:
        content = await litellm.afile_content(
            file_id=file_id, custom_llm_provider="openai", **kwargs
        )
    except Exception as exc:
        raise JudgeUnavailableError(
            f"cannot download batch results {file_id} ({_short(exc)}); run again to resume"
        ) from exc
    data = content.content if hasattr(content, "content") else bytes(content)
    records: list[dict[str, Any]] = []
    for raw in data.decode("utf-8", "replace").splitlines():
        try:
            record = json.loads(raw)
        except ValueError:
            continue  # a broken line answers nothing; its question is asked online
        if isinstance(record, dict):
            records.append(record)
    return records


def _answer(
    litellm: Any, judge: LiteLLMJudge, request: JudgeRequest, record: Mapping[str, Any]
) -> tuple[Answer, Usage] | str:
    """One result line as an answer and its usage, or why it answers nothing."""
    response = record.get("response")
    error = record.get("error")
    if not isinstance(response, dict) or error:
        message = error.get("message") if isinstance(error, dict) else error
        return f"the batch reported an error ({message or 'no detail'})"
    status = response.get("status_code")
    body = response.get("body")
    if status != 200 or not isinstance(body, dict):
        return f"the batch request failed with status {status}"
    # Read exactly as the online reply would be: the same answer format (a JSON schema,
    # log-probabilities or text), the same refusals.
    try:
        completion = completion_from_json(body)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        return f"question {request.question.id}: an unreadable batch reply ({exc})"
    tallied = judge.read_completion(request.question, completion)
    if not isinstance(tallied, Answer):
        return tallied.detail
    base = response_usage(litellm, judge.model, body, batch=True)
    spent = Usage(
        calls=1,
        prompt_tokens=base.prompt_tokens,
        completion_tokens=base.completion_tokens,
        cached_tokens=base.cached_tokens,
        cost=base.cost,
        batch_calls=1,
    )
    return dataclasses.replace(tallied, usage=spent), spent


def _connection(judge: LiteLLMJudge) -> dict[str, Any]:
    """The endpoint and key litellm's files and batches calls need."""
    options: dict[str, Any] = {}
    base = judge.api_base or os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE")
    if base:
        options["api_base"] = base
    if judge.api_key is not None:
        options["api_key"] = judge.api_key
    return options


def _identity_digest(judge: LiteLLMJudge) -> str:
    material = json.dumps(judge.cache_identity(), sort_keys=True, default=str)
    return hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]


def _poll_from_env() -> float:
    raw = os.environ.get(POLL_ENV)
    try:
        value = float(raw) if raw else DEFAULT_POLL_SECONDS
    except ValueError:
        value = DEFAULT_POLL_SECONDS
    return max(0.01, value)


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:200] or type(exc).__name__
