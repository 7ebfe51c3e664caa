"""The ``canon align`` HTML page: its reliability diagrams, escaped text, and how Chromium
draws them."""

from __future__ import annotations

from pathlib import Path

import pytest

from canon.core.agreement import LabelPair, agreement, modal_label
from canon.core.calibration import Forecast, calibration
from canon.core.rubric import Choice, Question
from canon.core.usage import UsageSummary
from canon.report.align_html import alignment_html

SCREENSHOT = Path("/tmp/canon-align-report-screenshot.png")
GRADED = (Choice("yes", 1.0), Choice("partly", 0.5), Choice("no", 0.0), Choice("n/a", None))
HOSTILE = "<script>window.canonPwned=1</script>"
P2 = Question("P2", "principle", "Uphold it?", GRADED, "Escalate.", HOSTILE)
# the person's label, then the judge's answer: bins 0.6 (2 right), 0.7 (1 of 2), 0.9 (2 right)
ANSWERS = [
    ("no", {"no": 0.6, "yes": 0.4}),
    ("yes", {"yes": 0.6, "partly": 0.4}),
    ("no", {"yes": 0.7, "no": 0.3}),
    ("yes", {"yes": 0.7, "no": 0.3}),
    ("yes", {"yes": 0.9, "no": 0.1}),
    ("no", {"no": 0.9, "n/a": 0.1}),
]


@pytest.fixture
def page_text() -> str:
    pairs = [
        LabelPair(f"a{i}", label, modal_label(answer) or "")
        for i, (label, answer) in enumerate(ANSWERS)
    ]
    forecasts = [Forecast(answer, label) for label, answer in ANSWERS]
    return alignment_html(
        [agreement(P2, pairs)],
        [calibration(P2, forecasts)],
        suite="demo",
        judge="typesafe:jev-1.13.0",
        labels="people.jsonl",
        artifacts=len(ANSWERS),
        usage=UsageSummary(),
    )


def test_the_page_holds_one_diagram_with_a_bar_per_occupied_bin_and_escapes_text(page_text):
    assert page_text.count('<svg class="reliability"') == 1
    assert page_text.count('class="bar"') == 3
    assert HOSTILE not in page_text and "&lt;script&gt;" in page_text
    assert "<script" not in page_text
    assert "Brier" in page_text and "ECE" in page_text and "kappa" in page_text


def test_chromium_draws_each_bar_as_high_as_its_accuracy_and_fetches_nothing(
    page, tmp_path, page_text
):
    path = tmp_path / "align.html"
    path.write_text(page_text, encoding="utf-8")
    page.navigate(path.as_uri())
    seen = page.evaluate(
        """(() => {
            const svg = document.querySelector('svg.reliability');
            const box = svg.getBoundingClientRect();
            return {
                pwned: typeof window.canonPwned,
                width: box.width,
                height: box.height,
                bars: [...svg.querySelectorAll('rect.bar')].map((r) => r.getBBox().height),
                counts: [...svg.querySelectorAll('text.count')].map((t) => t.textContent),
            };
        })()"""
    )
    assert seen["pwned"] == "undefined"
    assert seen["width"] > 300 and seen["height"] > 300
    # accuracy 1, 0.5 and 1 on a 300-unit plot
    assert seen["bars"] == pytest.approx([300.0, 150.0, 300.0], abs=0.5)
    assert seen["counts"] == ["2", "2", "2"]
    assert page.requested_urls() == [path.as_uri()]
    assert page.console_problems() == []
    page.screenshot(SCREENSHOT)
