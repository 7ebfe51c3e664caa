"""Canon's bodies and the test server's replies against the vendors' own SDKs: what the
OpenAI Decisions client sends is what the ``openai`` SDK sends (same path and fields), the
test server answers in a shape the SDK's ``Decision`` model accepts, and the System One body
is a valid ``SystemOneRequest`` of typesafe-sdk (its OpenAPI-generated schema)."""

from __future__ import annotations

from typing import Any

import pytest

from canon.judge.decisions import openai_decisions, systemone
from canon.judge.decisions.asking import AskedQuestion

openai = pytest.importorskip("openai")
schemas = pytest.importorskip("typesafe_sdk._schemas.models")


def test_the_openai_sdk_sends_what_canon_sends_and_reads_the_servers_reply(
    server: Any, state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    body = openai_decisions.build("gpt-6-luna", state, asked)
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="sk-test", max_retries=0)
    decision = client.decisions.create(
        model=body["model"], input=body["input"], questions=body["questions"]
    )
    assert server.requests == [body]  # the same path (/v1/decisions) and the same fields
    checked = openai.types.Decision.model_validate(decision.model_dump())
    assert [a.name for a in checked.answers] == [item.id for item in asked]
    assert all(a.type == "choice" for a in checked.answers)


def test_the_system_one_body_is_a_valid_request_of_typesafe_sdk(
    state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    body = systemone.build("jev-1.13.0", state, asked)
    request = schemas.SystemOneRequest.model_validate(body)
    assert request.model_dump(mode="json", exclude_none=False)["questions"] == body["questions"]
