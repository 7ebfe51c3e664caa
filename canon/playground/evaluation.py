"""One Evaluate press: decode both editor texts strictly, then validate and evaluate them."""

from __future__ import annotations

import json
from typing import Any

from canon.gates.policy import PolicyError, decode_json_text, evaluate_response, validate_policy


def format_json(value: object) -> str:
    """Render a JSON value the way the policy CLI prints it (sorted, indent 2, newline)."""
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def error_object(code: str, message: str) -> dict[str, Any]:
    """Build a controlled-error object in the policy CLI's shape."""
    return {"error": {"code": code, "message": message}}


def evaluate_texts(policy_text: str, response_text: str) -> dict[str, Any]:
    """Evaluate editor texts; return ``{"result", "text"}`` or the library's error object."""
    try:
        # The policy is decoded and validated before the response is looked at, as in the
        # CLI, so a broken policy is the error the user sees first.
        policy = validate_policy(decode_json_text(policy_text, what="policy"))
        response = decode_json_text(response_text, what="response")
        result = evaluate_response(policy, response)
    except PolicyError as exc:
        return exc.to_json()
    payload = result.to_json()
    return {"result": payload, "text": format_json(payload)}
