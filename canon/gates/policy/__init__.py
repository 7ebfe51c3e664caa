"""The JSON policy gate: validate a policy once, evaluate structured responses against it.

Pure: every function takes parsed values (or bytes for the strict decoder) and returns
values; reading files and printing belong to ``canon.cli.policy``.
"""

from canon.gates.policy.decoding import MAX_INPUT_BYTES, decode_json_bytes, decode_json_text
from canon.gates.policy.errors import ERROR_CODES, PolicyError
from canon.gates.policy.evaluation import check_response, evaluate_response
from canon.gates.policy.explain import Explanation, RuleExplanation, explain_evaluation
from canon.gates.policy.gate import policy_outcome
from canon.gates.policy.jsonvalue import canonical_text
from canon.gates.policy.model import EvaluationResult, Policy
from canon.gates.policy.precedence import Evaluator, OrderReport, check_order_conformance
from canon.gates.policy.rules import REASON_CODES, RULE_KINDS, Rule, RuleResult
from canon.gates.policy.synthetic import SyntheticCase, SyntheticCases, generate_synthetic_cases
from canon.gates.policy.validation import validate_policy

__all__ = [
    "ERROR_CODES",
    "MAX_INPUT_BYTES",
    "REASON_CODES",
    "RULE_KINDS",
    "EvaluationResult",
    "Evaluator",
    "Explanation",
    "OrderReport",
    "Policy",
    "PolicyError",
    "Rule",
    "RuleExplanation",
    "RuleResult",
    "SyntheticCase",
    "SyntheticCases",
    "canonical_text",
    "check_order_conformance",
    "check_response",
    "decode_json_bytes",
    "decode_json_text",
    "evaluate_response",
    "explain_evaluation",
    "generate_synthetic_cases",
    "policy_outcome",
    "validate_policy",
]
