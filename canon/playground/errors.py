"""The playground's own controlled error."""

from __future__ import annotations

from canon.gates.policy.errors import PLAYGROUND_UNAVAILABLE, PolicyError


class PlaygroundError(PolicyError):
    """The playground server could not be started or served."""

    def __init__(self, message: str, code: str = PLAYGROUND_UNAVAILABLE) -> None:
        super().__init__(code, message)
