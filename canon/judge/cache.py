"""The judge answer cache: a model judge is asked a given question about a given text once.

An answer is stored under a digest of everything that shapes it: the judge's own settings
(model, sampling, endpoint) and the exact messages it is sent, which hold the rubric's
instructions, the constitution, the artifact's text, the question and its choices. Change
any of those and the question is asked again. Only answers are stored: a failure is never
cached, so a flaky judge is asked again on the next run.

The store is one SQLite file (the standard library's ``sqlite3``): every write is its own
transaction, so a run that stops half way leaves a usable cache, and concurrent runs share
it safely. A file that is not a usable cache stops the run with ``CacheError`` rather than
being ignored or overwritten. A single entry that is not an answer is discarded and the
question asked again (``discarded`` counts them). When another process holds the write lock
for longer than ``busy_timeout``, answers wait in memory and are written once the lock is
free; a run never loses an answer to a busy file (``unsaved`` counts what was still waiting
at the end).

Only judges that say what identifies them (``cache_identity``) are cached; a ``MockJudge``
is not, so an edited mock script always takes effect.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from canon.core.scoring import Answer, score_cell
from canon.errors import CacheError, JudgeError
from canon.judge.base import (
    Judge,
    JudgeRequest,
    ResponseAnswers,
    ResponseJudge,
    is_deterministic,
    request_prompt,
)

# Bump when the key or the stored form changes: old entries then simply stop matching.
CACHE_FORMAT = 2
_SCHEMA = "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, answer TEXT NOT NULL)"
_ADVICE = "delete the file (it only saves judge calls) or run with --no-cache"
# How long one write waits for another process's lock before the answers are kept pending.
BUSY_TIMEOUT = 30.0
# While the file is busy, how long a later write waits before it gives up again: short, so a
# locked cache slows the run down by little.
BUSY_RETRY_TIMEOUT = 0.05


@runtime_checkable
class IdentifiedJudge(Judge, Protocol):
    """A judge that can say which settings determine its answers."""

    def cache_identity(self) -> Mapping[str, Any]:
        """JSON-ready settings that, with the prompt, determine the judge's answers."""
        ...


def answer_key(identity: Mapping[str, Any], request: JudgeRequest) -> str:
    """The digest an answer is stored under: the judge's identity and the exact prompt."""
    prompt = request_prompt(request)
    material = json.dumps(
        [CACHE_FORMAT, dict(identity), request.variant, prompt.as_messages()],
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


class AnswerCache:
    """Answers on disk, keyed by ``answer_key``."""

    def __init__(self, path: Path, *, busy_timeout: float = BUSY_TIMEOUT) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self.discarded = 0  # entries that were not answers, deleted and asked again
        self._pending: dict[str, str] = {}  # answers waiting for a busy file's lock
        self._busy = False
        if path.is_dir():
            raise CacheError(
                f"{path}: the judge answer cache is a directory, expected a file; set "
                "'judge_cache' in canon.yaml to a file path, or run with --no-cache"
            )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # autocommit: each insert commits on its own, nothing is left pending; the
            # connection may be used from run_sync's worker thread, one caller at a time
            self._db = sqlite3.connect(
                path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            self._set_up(busy_timeout)
        except (OSError, sqlite3.Error) as exc:
            raise _unusable(path, "open", exc) from None

    def _set_up(self, busy_timeout: float) -> None:
        """Switch to WAL and create the table, waiting out another run doing the same.

        Two runs that open a new cache at the same moment race for the switch to WAL, and
        SQLite answers the loser "locked" at once instead of calling its busy handler.
        """
        deadline = time.monotonic() + busy_timeout
        while True:
            try:
                self._db.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
                self._db.execute("PRAGMA synchronous=NORMAL")  # a lost entry: one judge call
                self._db.execute(_SCHEMA)
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)

    @property
    def unsaved(self) -> int:
        """Answers of this run still waiting to be written because the file is busy."""
        return len(self._pending)

    def get(self, key: str) -> Answer | None:
        """The stored answer under ``key``, or None (also for an entry that is no answer)."""
        if key in self._pending:
            return self._decode(self._pending[key])
        try:
            row = self._db.execute("SELECT answer FROM answers WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            if _is_busy(exc):
                return None  # asking the judge again beats waiting on someone else's lock
            raise _unusable(self.path, "read", exc) from None
        if row is None:
            return None
        answer = self._decode(row[0])
        if answer is None:
            # Not an answer (a damaged or foreign entry): ask again; the new answer's
            # INSERT OR REPLACE overwrites it, so no write is needed here.
            self.discarded += 1
        return answer

    def put(self, key: str, answer: Answer) -> None:
        """Store ``answer`` under ``key`` (a later answer for the same key replaces it)."""
        self._pending[key] = json.dumps(
            {"distribution": dict(answer.distribution), "rationale": answer.rationale},
            sort_keys=True,
        )
        self.flush()

    def flush(self, *, wait: bool = False) -> int:
        """Write the answers waiting for the lock; return how many still wait.

        While the file is busy a write waits only briefly, unless ``wait`` (the end of a
        run) asks for the full ``busy_timeout`` once more.
        """
        if not self._pending:
            return 0
        timeout = self.busy_timeout if wait or not self._busy else BUSY_RETRY_TIMEOUT
        try:
            self._db.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany(
                "INSERT OR REPLACE INTO answers VALUES (?, ?)", list(self._pending.items())
            )
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            if self._db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
            if not _is_busy(exc):
                raise _unusable(self.path, "write", exc) from None
            self._busy = True
            return len(self._pending)
        self._pending.clear()
        self._busy = False
        return 0

    def __len__(self) -> int:
        try:
            return int(self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])
        except sqlite3.Error as exc:
            raise _unusable(self.path, "read", exc) from None

    def close(self) -> None:
        """Write what is pending (waiting for the lock once more), then close the file."""
        try:
            self.flush(wait=True)
        finally:
            self._db.close()

    @staticmethod
    def _decode(stored: object) -> Answer | None:
        try:
            data = json.loads(stored) if isinstance(stored, str) else None
        except (ValueError, RecursionError):
            data = None
        distribution = data.get("distribution") if isinstance(data, dict) else None
        rationale = data.get("rationale") if isinstance(data, dict) else None
        if (
            not isinstance(distribution, dict)
            or not distribution
            or not all(
                isinstance(label, str) and _is_mass(mass) for label, mass in distribution.items()
            )
            or not (rationale is None or isinstance(rationale, str))
        ):
            return None
        return Answer(distribution=distribution, rationale=rationale)


def _is_busy(exc: sqlite3.Error) -> bool:
    # SQLITE_BUSY / SQLITE_LOCKED: another connection holds the lock; the file itself is fine.
    return isinstance(exc, sqlite3.OperationalError) and (
        "locked" in str(exc) or "busy" in str(exc)
    )


def _unusable(path: Path, action: str, exc: Exception) -> CacheError:
    if isinstance(exc, sqlite3.Error) and _is_busy(exc):
        return CacheError(
            f"{path}: cannot {action} the judge answer cache: the file is busy (another "
            "process holds its lock); run again when that process is done, or run with "
            "--no-cache"
        )
    return CacheError(f"{path}: cannot {action} the judge answer cache: {exc}; {_ADVICE}")


def _is_mass(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1


class CachingJudge:
    """A judge that answers from the cache when it can and asks ``inner`` when it cannot."""

    def __init__(self, inner: IdentifiedJudge, cache: AnswerCache) -> None:
        self.inner = inner
        self.cache = cache
        self.hits = 0
        self.misses = 0
        self._identity = dict(inner.cache_identity())

    def renew_identity(self) -> None:
        """Key answers by the inner judge's settings as they are now (one changed since)."""
        self._identity = dict(self.inner.cache_identity())

    @property
    def name(self) -> str:
        """The inner judge's name: a cached answer is that judge's answer."""
        return self.inner.name

    def __repr__(self) -> str:
        return f"CachingJudge({self.inner!r}, {str(self.cache.path)!r})"

    @property
    def deterministic(self) -> bool:
        """What the judge inside says (a cached answer is its answer)."""
        return is_deterministic(self.inner)

    async def answer(self, request: JudgeRequest) -> Answer:
        """The cached answer, or the inner judge's (stored for next time)."""
        key = answer_key(self._identity, request)
        cached = self.cache.get(key)
        if cached is not None and _fits(request, cached):
            self.hits += 1
            return cached
        if cached is not None:
            self.cache.discarded += 1  # an answer, but not to this question: ask again
        answer = await self.inner.answer(request)  # a failure raises: nothing is stored
        self.misses += 1
        self.cache.put(key, answer)
        return answer


class CachingResponseJudge(CachingJudge):
    """A cached judge that answers a whole response in one call: the cache still keeps
    answers per question (and wording), and the call asks only what the cache lacks."""

    inner: Any  # an IdentifiedJudge that is also a ResponseJudge

    async def answer_all(self, requests: Sequence[JudgeRequest]) -> ResponseAnswers:
        """The cached answers, and one call for the rest (stored for next time)."""
        keys = [answer_key(self._identity, r) for r in requests]
        outcomes: dict[int, Answer | JudgeError] = {}
        missing: list[int] = []
        for index, (request, key) in enumerate(zip(requests, keys, strict=True)):
            cached = self.cache.get(key)
            if cached is not None and _fits(request, cached):
                self.hits += 1
                outcomes[index] = cached
            else:
                if cached is not None:
                    self.cache.discarded += 1
                missing.append(index)
        if not missing:
            return ResponseAnswers(outcomes)
        asked = await self.inner.answer_all([requests[i] for i in missing])
        self.misses += len(missing)
        for position, index in enumerate(missing):
            outcome = asked.outcomes[position]
            outcomes[index] = outcome
            if isinstance(outcome, Answer):
                self.cache.put(keys[index], outcome)  # a failure is never stored
        return ResponseAnswers(outcomes, asked.usage, asked.model)


def _fits(request: JudgeRequest, answer: Answer) -> bool:
    # An entry naming labels the question does not offer would leave the question unscored
    # on every run ("run again" forever); it is treated like any other damaged entry.
    try:
        score_cell(request.question, answer)
    except JudgeError:
        return False
    return True


def cached_judge(judge: Judge, path: Path | None) -> Judge:
    """``judge`` answering through the cache at ``path``; as it is when it cannot be cached.

    No path (caching turned off) or a judge without ``cache_identity`` (a ``MockJudge``)
    leaves the judge alone.
    """
    if path is None or not isinstance(judge, IdentifiedJudge):
        return judge
    if getattr(judge, "alias", False):
        return judge  # an alias moves with releases: yesterday's answer is another model's
    if isinstance(judge, ResponseJudge):
        return CachingResponseJudge(judge, AnswerCache(path))
    return CachingJudge(judge, AnswerCache(path))


def fresh_judge(judge: Judge) -> Judge:
    """The judge behind any cache, for questions that must be asked anew (re-asking a flip)."""
    return judge.inner if isinstance(judge, CachingJudge) else judge
