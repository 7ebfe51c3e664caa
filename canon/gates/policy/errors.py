"""The policy gate's controlled errors and their stable public codes."""

from __future__ import annotations

from typing import Any, Final

from canon.errors import GateError

INVALID_COMMAND: Final = "INVALID_COMMAND"
INVALID_JSON_INPUT: Final = "INVALID_JSON_INPUT"
INVALID_POLICY: Final = "INVALID_POLICY"
INVALID_RESPONSE: Final = "INVALID_RESPONSE"
ORDER_CHECK_INVALID: Final = "ORDER_CHECK_INVALID"
ORDER_CHECK_TOO_LARGE: Final = "ORDER_CHECK_TOO_LARGE"
SYNTHETIC_GENERATION_FAILED: Final = "SYNTHETIC_GENERATION_FAILED"
JSON_OUTPUT_ERROR: Final = "JSON_OUTPUT_ERROR"
INVALID_DATA: Final = "INVALID_DATA"
PLAYGROUND_UNAVAILABLE: Final = "PLAYGROUND_UNAVAILABLE"

ERROR_CODES: Final = frozenset(
    {
        INVALID_COMMAND,
        INVALID_JSON_INPUT,
        INVALID_POLICY,
        INVALID_RESPONSE,
        ORDER_CHECK_INVALID,
        ORDER_CHECK_TOO_LARGE,
        SYNTHETIC_GENERATION_FAILED,
        JSON_OUTPUT_ERROR,
        INVALID_DATA,
        PLAYGROUND_UNAVAILABLE,
    }
)


class PolicyError(GateError):
    """A controlled policy-gate failure carrying a stable ``code`` and optional rule context."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        policy_id: str | None = None,
        rule_id: str | None = None,
        rule_index: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.policy_id = policy_id
        self.rule_id = rule_id
        self.rule_index = rule_index

    def with_code(self, code: str) -> PolicyError:
        """Return the same failure re-labelled with another public code."""
        return PolicyError(
            code,
            self.message,
            policy_id=self.policy_id,
            rule_id=self.rule_id,
            rule_index=self.rule_index,
        )

    def to_json(self) -> dict[str, Any]:
        """The ``{"error": {...}}`` document; rule context keys appear only when known."""
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.policy_id is not None:
            body["policy_id"] = self.policy_id
        if self.rule_id is not None:
            body["rule_id"] = self.rule_id
        if self.rule_index is not None:
            body["rule_index"] = self.rule_index
        return {"error": body}
