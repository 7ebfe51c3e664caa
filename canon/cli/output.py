"""Standard output that a closed pipe cannot turn into a crash (``canon check | head``).

When the reader goes away, the rest of the printed report is dropped, the command goes on
(its JUnit and HTML reports are still written) and it exits with its own code: a closed pipe
says nothing about the run.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, TextIO


class PipeSafeStdout:
    """A text stream that turns a broken pipe into silence instead of an exception."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.broken = False

    def write(self, text: str) -> int:
        """Write, unless the reader has gone."""
        if not self.broken:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self.drop()
        return len(text)

    def flush(self) -> None:
        """Flush, unless the reader has gone."""
        if not self.broken:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self.drop()

    def drop(self) -> None:
        """Drop everything written from now on: the reader has gone."""
        self.broken = True
        # Point the descriptor at /dev/null, so the interpreter's last flush at exit has
        # somewhere to go instead of printing "Exception ignored ... BrokenPipeError".
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def drop_stdout() -> None:
    """After a broken pipe met on ``sys.stdout.buffer`` itself: print nothing more."""
    if isinstance(sys.stdout, PipeSafeStdout):
        sys.stdout.drop()


def protect_stdout() -> None:
    """Make ``sys.stdout`` survive a closed pipe for the rest of the command."""
    if sys.stdout is not None and not isinstance(sys.stdout, PipeSafeStdout):
        sys.stdout = PipeSafeStdout(sys.stdout)
