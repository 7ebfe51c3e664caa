"""Run a coroutine from synchronous code, even inside a running event loop."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to completion and return its result.

    With no loop running (plain pytest) this is ``asyncio.run``. Inside a running loop
    (pytest-asyncio, notebooks) the coroutine runs on a fresh loop in a helper thread,
    because a running loop cannot be re-entered; the thread runs in a copy of the caller's
    context, so a notice listener (canon.judge.notices) installed by the caller still hears.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # re-raised in the caller's thread below
            outcome["error"] = exc

    context = contextvars.copy_context()
    thread = threading.Thread(target=context.run, args=(target,), name="canon-run-sync")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    result: T = outcome["value"]
    return result
