"""Artifacts: what an agent produced, plus what the deterministic gates look at."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from canon.errors import InputError

KEY_LENGTH = 12
DIGEST_LENGTH = 16  # 64 bits: two different texts of one suite never share a digest


@dataclass(frozen=True, slots=True)
class Artifact:
    """An agent's output text, with an optional structured response and trace."""

    text: str
    response: Any = None  # parsed JSON the policy gate checks, when there is one
    trace: Any = None  # parsed OpenTelemetry trace the contract gate checks, when there is one
    id: str | None = None  # a stable id from the suite; otherwise the key is a text digest
    # Further responses of the same artifact (repeated agent runs): each is judged, and the
    # answers are pooled, so the verdict rests on the spread of the agent's outputs.
    replicates: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """How a baseline finds this artifact again: its suite id, or a digest of its text."""
        return self.id if self.id is not None else text_key(self.text)

    @property
    def texts(self) -> tuple[str, ...]:
        """Every response of this artifact: its text, then its replicates."""
        return (self.text, *self.replicates)

    def replicate(self, index: int) -> Artifact:
        """The artifact as its ``index``-th response (counted round), for one judge call."""
        texts = self.texts
        if len(texts) == 1:
            return self
        return Artifact(texts[index % len(texts)], self.response, self.trace, self.id)


def text_key(text: str) -> str:
    """A short, stable digest of an artifact's text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:KEY_LENGTH]


def text_digest(text: str) -> str:
    """The digest a baseline records of an artifact's text, to tell an unchanged text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_LENGTH]


def as_artifact(value: object) -> Artifact:
    """Accept text or an Artifact; refuse anything else with a clear message."""
    if isinstance(value, Artifact):
        artifact = value
    elif isinstance(value, str):
        artifact = Artifact(text=value)
    else:
        raise InputError(
            f"an artifact must be text or canon.Artifact, got a {type(value).__name__}; "
            "wrap structured output as Artifact(text=..., response=...)"
        )
    if not isinstance(artifact.text, str):
        raise InputError(f"Artifact.text must be text, got a {type(artifact.text).__name__}")
    if not artifact.text.strip():
        raise InputError("the artifact's text is empty; there is nothing for the judge to read")
    return artifact
