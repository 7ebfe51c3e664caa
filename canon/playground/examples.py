"""The built-in example the playground opens with, and the inputs its smoke test posts."""

from __future__ import annotations

# One rule of every kind, so a first evaluation shows the whole vocabulary at work.
EXAMPLE_POLICY = """\
{
  "schema_version": "1.0",
  "policy_id": "playground-example",
  "rules": [
    {"rule_id": "decision-present", "kind": "required_field",
     "path": "decision"},
    {"rule_id": "decision-approved", "kind": "equals",
     "path": "decision", "value": "approve"},
    {"rule_id": "risk-acceptable", "kind": "one_of",
     "path": "review.risk", "values": ["low", "medium"]},
    {"rule_id": "not-blocked", "kind": "false",
     "path": "blocked"},
    {"rule_id": "no-open-issues", "kind": "empty_list",
     "path": "review.open_issues"}
  ]
}
"""

EXAMPLE_PASSING_RESPONSE = """\
{
  "decision": "approve",
  "blocked": false,
  "review": {"risk": "low", "open_issues": []}
}
"""

# Fails every rule but the first, each with a different reason code.
EXAMPLE_FAILING_RESPONSE = """\
{
  "decision": "escalate",
  "blocked": true,
  "review": {"risk": "high"}
}
"""

EXAMPLE_FAILING_REASONS = (
    "RULE_SATISFIED",
    "VALUE_NOT_EQUAL",
    "VALUE_NOT_ALLOWED",
    "VALUE_NOT_FALSE",
    "FIELD_MISSING",
)

# Truncated mid-object: the strict decoder must refuse it before validation starts.
EXAMPLE_MALFORMED_POLICY = '{"schema_version": "1.0", "policy_id": "broken", "rules": ['

# Well-formed JSON that schema 1.0 rejects (an unknown rule kind).
EXAMPLE_INVALID_POLICY = """\
{
  "schema_version": "1.0",
  "policy_id": "unknown-kind",
  "rules": [{"rule_id": "r1", "kind": "matches", "path": "decision"}]
}
"""
