"""Artifacts: what an agent produced, plus what the deterministic gates look at."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from canon.errors import InputError

KEY_LENGTH = 12
DIGEST_LENGTH = 16  # 64 bits: two different texts of one suite never share a digest


# The roles a chat message of an artifact's input may have.
ROLES = ("system", "developer", "user", "assistant", "tool")


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message of the request an artifact answers."""

    role: str
    content: str


# What an artifact answers: the request as text, or as the chat messages that led to it.
Input = str | tuple[Message, ...]


@dataclass(frozen=True, slots=True)
class Artifact:
    """An agent's output text, with what it answers (``input``), what the agent had to work
    with (``context``), and an optional structured response and trace for the gates."""

    text: str
    response: Any = None  # parsed JSON the policy gate checks, when there is one
    trace: Any = None  # parsed OpenTelemetry trace the contract gate checks, when there is one
    id: str | None = None  # a stable id from the suite; otherwise the key is a text digest
    # Further responses of the same artifact (repeated agent runs): each is judged, and the
    # answers are pooled, so the verdict rests on the spread of the agent's outputs.
    replicates: tuple[str, ...] = ()
    # The request the artifact answers (text or chat messages) and the material the agent
    # worked from (retrieved passages, tool results): the judge sees both, fenced as untrusted.
    input: Input | None = None
    context: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """How a baseline finds this artifact again: its suite id, or a digest of its text
        (and of its input, when it has one: one reply may answer two requests)."""
        if self.id is not None:
            return self.id
        if self.input is None:
            return text_key(self.text)
        return text_key(f"{input_text(self.input)}\n\x00\n{self.text}")

    @property
    def input_digest(self) -> str | None:
        """A digest of the input, recorded in a baseline to tell a changed request."""
        if self.input is None:
            return None
        return text_digest(_canonical_input(self.input))

    @property
    def texts(self) -> tuple[str, ...]:
        """Every response of this artifact: its text, then its replicates."""
        return (self.text, *self.replicates)

    def replicate(self, index: int) -> Artifact:
        """The artifact as its ``index``-th response (counted round), for one judge call."""
        texts = self.texts
        if len(texts) == 1:
            return self
        return Artifact(
            texts[index % len(texts)],
            self.response,
            self.trace,
            self.id,
            input=self.input,
            context=self.context,
        )


def input_text(value: Input) -> str:
    """An input as the judge reads it: the text, or one ``role: content`` block a message."""
    if isinstance(value, str):
        return value
    return "\n\n".join(f"{m.role}: {m.content}" for m in value)


def _canonical_input(value: Input) -> str:
    if isinstance(value, str):
        return value
    return json.dumps([[m.role, m.content] for m in value], ensure_ascii=False)


def input_from(value: object, where: str) -> Input:
    """An input given as text or as a list of ``{role, content}`` messages; anything else
    raises InputError naming ``where``."""
    if isinstance(value, str):
        if not value.strip():
            raise InputError(f"{where}: 'input' is empty; leave it out or give the request")
        return value
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray) and value:
        messages: list[Message] = []
        for index, item in enumerate(value, 1):
            if isinstance(item, Message):
                messages.append(item)
                continue
            if not isinstance(item, Mapping) or set(item) != {"role", "content"}:
                raise InputError(
                    f"{where}: input message {index} must be a mapping with exactly 'role' "
                    "and 'content'"
                )
            role, content = item["role"], item["content"]
            if role not in ROLES:
                raise InputError(
                    f"{where}: input message {index} has role {role!r}; expected one of "
                    f"{', '.join(ROLES)}"
                )
            if not isinstance(content, str):
                raise InputError(f"{where}: input message {index}'s 'content' must be text")
            messages.append(Message(role, content))
        return tuple(messages)
    raise InputError(
        f"{where}: 'input' must be the request as text, or a non-empty list of "
        "{role, content} messages"
    )


def context_from(value: object, where: str) -> tuple[str, ...]:
    """Context given as one text or a list of texts; anything else raises InputError."""
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        for index, item in enumerate(value, 1):
            if not isinstance(item, str):
                raise InputError(f"{where}: context item {index} must be text")
        return tuple(item for item in value if item.strip())
    raise InputError(f"{where}: 'context' must be text or a list of texts")


def text_key(text: str) -> str:
    """A short, stable digest of an artifact's text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:KEY_LENGTH]


def text_digest(text: str) -> str:
    """The digest a baseline records of an artifact's text, to tell an unchanged text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_LENGTH]


def as_artifact(value: object, *, input: object = None, context: object = None) -> Artifact:
    """Accept text or an Artifact, with the ``input`` it answers and its ``context`` (given
    here, or on the Artifact); refuse anything else with a clear message."""
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
    given_input = artifact.input if input is None else input
    given_context = artifact.context if context is None else context
    if given_input is not None:
        given_input = input_from(given_input, "the artifact")
    checked_context = context_from(given_context, "the artifact")
    if given_input != artifact.input or checked_context != artifact.context:
        artifact = replace(artifact, input=given_input, context=checked_context)
    return artifact
