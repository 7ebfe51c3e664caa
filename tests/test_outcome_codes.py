"""Verdict reasons and notes are coded values (canon.core.outcome): code decides by kind.

The grep below keeps canon/core and canon/report from deciding anything by matching the
English of a reason or note again; the behaviour tests show what text matching got wrong.
"""

from __future__ import annotations

import pickle
import re
from pathlib import Path

from canon.core.baseline import baseline_from_results
from canon.core.compare import gate, provenance_notes
from canon.core.constitution import Constitution, Principle
from canon.core.gate_outcome import GateOutcome
from canon.core.outcome import Note, NoteKind, Reason, ReasonKind
from canon.core.scoring import (
    Answer,
    judge_verdict,
    refused_cell,
    score_cell,
    stopped_verdict,
    unscored_cell,
)
from canon.core.settle import settle
from canon.project.store import load_rubric
from canon.report.check import remedy

ROOT = Path(__file__).resolve().parents[1]
RUBRIC = load_rubric()
CONSTITUTION = Constitution("Serve customers well.", (Principle("Be honest."),))
QUESTIONS = RUBRIC.questions_for(CONSTITUTION)

# Deciding by a message's text: a prefix or suffix test on a reason/note, a phrase looked
# for inside one, or one of the old prefix constants.
TEXT_MATCHING = re.compile(
    r"\b(?:r|n|reason|reasons|note|notes|line|message)\w*\.(?:startswith|endswith)\("
    r"|[\"'][^\"']*[\"']\s+(?:not\s+)?in\s+(?:r|n|reason|note|message)\b"
    r"|\bREACCEPT\s+(?:not\s+)?in\b"
    r"|_PREFIX\b"
)


def _matching(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if TEXT_MATCHING.search(line)]


def test_no_core_or_report_module_decides_by_a_message_text() -> None:
    found = [
        f"{path.relative_to(ROOT)}: {line}"
        for folder in ("canon/core", "canon/report")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line in _matching(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_grep_sees_the_old_spellings() -> None:
    old = [
        'reasons.extend(r for r in verdict.reasons if r.startswith("NSCP"))',
        'reasons = [r for r in result.reasons if "unscored" not in r]',
        "if stale or any(REACCEPT in note for note in comparison.notes):",
        "and all(any(r.startswith(REFUSED_PREFIX) for r in n.reasons) for n in failures)",
        "if not (prefixes and note.startswith(prefixes))",
    ]
    assert len(_matching("\n".join(old))) == len(old)
    assert _matching("reasons = [r for r in result.reasons if r.kind.is_evidence]") == []


def _verdict(key: str, **replies: str):  # type: ignore[no-untyped-def]
    cells = [
        score_cell(q, Answer({replies.get(q.id, "no" if q.kind == "gate" else "yes"): 1.0}))
        for q in QUESTIONS
    ]
    return judge_verdict(key, cells, 0.5)


def test_each_reason_carries_its_kind_and_facts() -> None:
    gate_id = next(q.id for q in QUESTIONS if q.kind == "gate")
    tripped = _verdict("a", **{gate_id: "yes"})
    assert [r.kind for r in tripped.reasons][:1] == [ReasonKind.NSCP]
    assert tripped.reasons[0].data["question"] == gate_id
    down = judge_verdict("b", [unscored_cell(q, "HTTP 500") for q in QUESTIONS], 0.5)
    assert [r.kind for r in down.reasons] == [ReasonKind.UNSCORED]
    assert down.reasons[0].data["questions"] == tuple(q.id for q in QUESTIONS)
    refused = judge_verdict("c", [refused_cell(q, "no") for q in QUESTIONS], 0.5)
    assert [r.kind for r in refused.reasons] == [ReasonKind.REFUSED]
    # still the English line users print and join
    assert "; ".join(down.reasons).startswith(f"{len(QUESTIONS)} of {len(QUESTIONS)} questions")
    stopped = stopped_verdict("d", 0.5, (GateOutcome("policy", "fail", ("bad",)),))
    assert stopped.reasons[0].kind is ReasonKind.GATE_FAILED
    assert stopped.reasons[0].data == {"gate": "policy"}


def test_a_reason_survives_pickling_with_its_kind() -> None:
    reason = Reason(ReasonKind.UNSCORED, "2 of 9 questions unscored", questions=("P1", "G"))
    back = pickle.loads(pickle.dumps(reason))
    assert (back, back.kind, back.data) == (reason, ReasonKind.UNSCORED, reason.data)
    assert back.code == "unscored" and isinstance(back, str)


def test_a_gate_reason_that_mentions_unscored_is_kept_as_evidence() -> None:
    # `"unscored" not in r` dropped every reason holding the word, so a policy failure about
    # an "unscored" field was replaced by "no question applied to this artifact".
    fails = GateOutcome("policy", "fail", ("field 'unscored' must be false",))
    stopped = stopped_verdict("a", 0.5, (fails,))
    baseline = baseline_from_results(
        [_verdict("a")],
        rubric=RUBRIC,
        judge="mock",
        constitution=CONSTITUTION.digest,
        threshold=0.5,
    )
    comparison = gate([stopped], baseline, 0.5)
    (non_canon,) = comparison.non_canon
    assert [r.kind for r in non_canon.reasons] == [ReasonKind.GATE_FAILED]
    assert "unscored" in non_canon.reasons[0]


def test_settle_keeps_a_refusal_whatever_its_wording() -> None:
    cells = [refused_cell(q, "content filter") for q in QUESTIONS]
    first = judge_verdict("a", cells, 0.5)
    settled = settle(first, cells, {})
    assert [r.kind for r in settled.reasons] == [ReasonKind.REFUSED]


def test_the_remedy_advises_reaccept_from_the_note_kind() -> None:
    result = _verdict("a")
    baseline = baseline_from_results(
        [result], rubric=RUBRIC, judge="mock", constitution="old", threshold=0.5
    )
    comparison = gate([result], baseline, 0.5)
    notes = provenance_notes(baseline, judge="mock", constitution="new")
    assert [n.kind for n in notes] == [NoteKind.CONSTITUTION_CHANGED]
    import dataclasses

    with_note = dataclasses.replace(comparison, notes=notes)
    assert "canon accept" in remedy(with_note, baseline)
    # the same words under a kind that does not advise re-accepting do not trigger it
    plain = Note(NoteKind.JUDGE_CHANGED, str(notes[0]))
    assert "canon accept" not in remedy(dataclasses.replace(comparison, notes=(plain,)), baseline)


def test_plain_strings_a_caller_puts_in_results_become_coded_and_fail_closed() -> None:
    from canon.core.scoring import ArtifactResult

    mine = ArtifactResult("a", False, 0.2, 0.2, False, 0.5, reasons=("my own rule failed",))
    assert mine.reasons[0].kind is ReasonKind.OTHER and mine.reasons[0] == "my own rule failed"
    baseline = baseline_from_results(
        [_verdict("a")], rubric=RUBRIC, judge="mock", constitution="c", threshold=0.5
    )
    comparison = gate([mine], baseline, 0.5)
    assert comparison.non_canon[0].reasons[0].kind is ReasonKind.OTHER  # kept as evidence
    import dataclasses

    noted = dataclasses.replace(comparison, notes=("a note of mine",))
    assert noted.notes[0].kind is NoteKind.OTHER
    assert "CONFORMS" not in remedy(noted, baseline)  # still fails: evidence stays evidence
