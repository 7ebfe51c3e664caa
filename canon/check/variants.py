"""What a confirmation re-ask shows: which response, which wording and choice order.

Re-asks vary what a misreading may stick to (issue 17, section 7): re-ask k uses the
rubric's wording k mod 3, its own choice order, and with replicates another response.
"""

from __future__ import annotations

from canon.core.prompt import choice_order
from canon.core.rubric import Question


def replicate_for(variant: int, replicates: int) -> int:
    """Which response re-ask ``variant`` shows: the first ``replicates`` re-asks show each
    once, and over ``replicates``² re-asks every response meets each of the rubric's three
    wordings (k mod 3), rather than one fixed pairing."""
    if replicates <= 1 or variant <= 0:
        return 0
    step = variant - 1
    return (step + step // replicates) % replicates


def describe_variant(
    question: Question, variant: int, judge: str | None = None, replicates: int = 1
) -> str:
    """How re-ask ``variant`` put the question: its wording, choice order, response, judge."""
    count = len(question.wordings) + 1
    order = "/".join(c.label for c in choice_order(question, variant))
    text = f"re-ask {variant}: wording {variant % count + 1} of {count}, choices {order}"
    if replicates > 1:
        text += f", response {replicate_for(variant, replicates) + 1} of {replicates}"
    return text if judge is None else f"{text}, judge {judge}"
