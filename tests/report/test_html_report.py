from __future__ import annotations

import re
import struct
import zlib
from pathlib import Path

from canon.core.scoring import falls_short
from canon.report.html import html_report, verdict_of

SCREENSHOT = Path("/tmp/canon-html-report-screenshot.png")


def test_the_page_has_no_script_and_fetches_nothing(mixed, plan):
    page = html_report(mixed, plan, suite="demo")
    assert "<script" not in page.lower()
    assert not re.search(r"\b(src|href)=", page)
    assert "http://" not in page and "https://" not in page and "@import" not in page
    assert "default-src 'none'" in page  # and the browser is told to refuse scripts anyway


def test_hostile_text_is_escaped_everywhere(mixed, plan, hostile):
    page = html_report(mixed, plan, suite="demo")
    assert "\x01" not in page and "]]>" not in page
    escaped = "&lt;script&gt;window.canonPwned = 1; alert(1)&lt;/script&gt; ]]&gt; &quot;dq&quot;"
    assert page.count(escaped) >= 3  # the key, the reason and the gate table
    assert "&#x27;sq&#x27; &amp; \\x01 end" in page
    assert "rate limited after 3 retries &lt;b&gt;&amp;&lt;/b&gt;" in page


def test_each_artifact_gets_a_section_with_its_verdict_and_question_table(mixed, plan):
    page = html_report(mixed, plan, suite="demo")
    found = re.findall(
        r'<section class="artifact [^"]+" id="artifact-(\d+)" data-verdict="([^"]+)"', page
    )
    # failing and incomplete artifacts first, in suite order; the canon one last, folded
    assert [v for _, v in found] == ["non-canon", "non-canon", "incomplete", "non-canon", "canon"]
    assert [int(i) for i, _ in found] == [2, 3, 4, 5, 1]  # anchors keep the suite position
    assert [v for _, v in sorted(found)] == [verdict_of(r) for r in mixed]
    folded = page[page.index('<details class="passing" id="passing">') :]
    assert folded.startswith('<details class="passing" id="passing"><summary>1 canon artifact(s)')
    assert 'id="artifact-1"' in folded
    assert page.count('<tr class="questions-row') == sum(len(r.cells) for r in mixed)
    short = sum(falls_short(c) for r in mixed for c in r.cells)
    assert 0 < page.count('<tr class="questions-row short">') == short
    assert '<td id="summary-judge">mock:test</td>' in page
    assert f'<td id="summary-constitution-digest">{plan.constitution.digest}</td>' in page


def test_a_check_page_shows_flips_drift_and_notes(regressed):
    plan, results, comparison = regressed
    page = html_report(results, plan, suite="demo", comparison=comparison)
    assert '<p class="banner bad" id="banner">REGRESSION</p>' in page
    assert page.count('<tr class="flips-row') == len(comparison.flips) == 2
    assert page.count('<tr class="flips-row regression">') == 1
    assert "confirmed - regression" in page and "unavailable" in page
    assert '<table id="drift">' in page and "<th>baseline mean</th>" in page
    assert "not in this run: gone" in page
    # only the artifact whose flip was confirmed is a red REGRESSED card, its scoring
    # verdict kept beside it as a plain fact
    assert page.count('class="artifact canon regressed"') == 1
    fine = page[page.index('<h2 class="key mono">fine</h2>') :].split("</p>")[0]
    assert '<span class="verdict">REGRESSED</span> <span class="scored">(scored canon)' in fine
    assert ">CANON<" not in fine


def _open(page, tmp_path: Path, text: str) -> str:
    path = tmp_path / "report.html"
    path.write_text(text, encoding="utf-8")
    url = path.as_uri()
    page.navigate(url)
    return url


def test_the_report_renders_in_chromium_with_hostile_text_inert(
    page, tmp_path, mixed, plan, hostile
):
    url = _open(page, tmp_path, html_report(mixed, plan, suite="demo"))
    seen = page.evaluate(
        """(() => ({
            pwned: typeof window.canonPwned,
            scripts: document.scripts.length,
            sections: [...document.querySelectorAll('section.artifact')].map((s) => ({
                key: s.querySelector('h2').textContent,
                verdict: s.querySelector('.verdict').textContent,
                rows: s.querySelectorAll('tr.questions-row').length,
                states: [...s.querySelectorAll('tr.questions-row td.state')]
                    .map((td) => td.textContent),
            })),
            reasons: [...document.querySelectorAll('ul.reasons li')].map((li) => li.textContent),
            banner: document.getElementById('banner').textContent,
        }))()"""
    )
    assert seen["pwned"] == "undefined" and seen["scripts"] == 0
    assert [s["verdict"] for s in seen["sections"]] == [
        "NON-CANON",
        "NON-CANON",
        "INCOMPLETE",
        "NON-CANON",
        "CANON",
    ]
    shown = hostile.replace("\x01", "\\x01")
    order = [*mixed[1:], mixed[0]]  # failing first, the canon one folded at the end
    assert [s["key"] for s in seen["sections"]] == [*(r.key for r in order[:3]), shown, "fine"]
    assert [s["rows"] for s in seen["sections"]] == [len(r.cells) for r in order]
    assert seen["sections"][2]["states"].count("unscored") == 1
    assert f"policy gate failed: rule {shown} failed; second reason" in seen["reasons"]
    assert seen["banner"] == "NON-CANON"
    assert page.requested_urls() == [url]
    assert page.console_problems() == []
    page.screenshot(SCREENSHOT)


def test_a_check_report_in_chromium_lists_the_flips(page, tmp_path, regressed):
    plan, results, comparison = regressed
    _open(page, tmp_path, html_report(results, plan, suite="demo", comparison=comparison))
    flips = page.evaluate(
        "[...document.querySelectorAll('#comparison tr.flips-row')]"
        ".map((tr) => [...tr.cells].map((td) => td.textContent))"
    )
    assert [(f[0], f[1], f[5]) for f in flips] == [
        ("fine", "P2 [escalate-large-refunds]", "confirmed - regression"),
        ("also-fine", "P2 [escalate-large-refunds]", "unavailable"),
    ]
    notes = page.evaluate(
        "[...document.querySelectorAll('ul.notes li')].map((li) => li.textContent)"
    )
    assert all(note in notes for note in comparison.notes)


def _png_pixels(path: Path) -> tuple[int, int, int, bytes]:
    """Width, height, bytes per pixel and the unfiltered rows of an 8-bit RGB(A) PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    offset, idat, header = 8, b"", b""
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind, body = data[offset + 4 : offset + 8], data[offset + 8 : offset + 8 + length]
        offset += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0
    channels = 4 if colour == 6 else 3
    raw, stride = zlib.decompress(idat), width * channels
    rows, previous = bytearray(), bytearray(stride)
    for y in range(height):
        kind, line = (
            raw[y * (stride + 1)],
            bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]),
        )
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                guess = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + guess) & 0xFF
        rows += line
        previous = line
    return width, height, channels, bytes(rows)


def _pixel(image: tuple[int, int, int, bytes], x: float, y: float) -> tuple[int, ...]:
    width, _, channels, rows = image
    start = (int(y) * width + int(x)) * channels
    return tuple(rows[start : start + 3])


def _is_red(rgb: tuple[int, ...]) -> bool:
    red, green, blue = rgb
    return red > 150 and green < 90 and blue < 90


def _is_green(rgb: tuple[int, ...]) -> bool:
    red, green, blue = rgb
    return green > 100 and red < 90 and blue < 90


def test_a_screenshot_of_a_regressed_check_shows_red_where_it_failed(page, tmp_path, regressed):
    plan, results, comparison = regressed
    texts = {r.key: f"The reply of {r.key}, to be read on demand." for r in results}
    report = html_report(results, plan, suite="suite", comparison=comparison, texts=texts)
    _open(page, tmp_path, report)
    # the canon artifacts are folded away under the failing ones until opened
    assert page.evaluate("document.getElementById('passing').open") is False
    page.evaluate("document.getElementById('passing').open = true")
    # One viewport as tall as the page: the screenshot then shows the very layout measured.
    height = page.evaluate("document.documentElement.scrollHeight")
    page.send(
        "Emulation.setDeviceMetricsOverride",
        width=1280,
        height=height,
        deviceScaleFactor=1,
        mobile=False,
    )
    boxes = page.evaluate(
        """(() => {
            const box = (el) => { const r = el.getBoundingClientRect();
                return {x: r.x + window.scrollX, y: r.y + window.scrollY,
                        w: r.width, h: r.height}; };
            const cards = [...document.querySelectorAll('section.artifact')];
            return {
                title: document.title,
                banner: box(document.getElementById('banner')),
                cards: cards.map((s) => ({key: s.querySelector('h2').textContent,
                    verdict: s.querySelector('.verdict').textContent, box: box(s),
                    verdictBox: box(s.querySelector('.verdict')),
                    textShown: s.querySelector('pre.artifact-text').checkVisibility()})),
            };
        })()"""
    )
    assert boxes["title"] == "Canon report: suite"
    shot = _png_pixels(page.screenshot(tmp_path / "check.png"))
    banner = boxes["banner"]
    assert shot[:2] == (1280, height)
    # the banner's right end, clear of its text
    assert _is_red(_pixel(shot, banner["x"] + banner["w"] - 6, banner["y"] + banner["h"] / 2))
    cards = {c["key"]: c for c in boxes["cards"]}
    assert [c["verdict"] for c in boxes["cards"]] == ["REGRESSED", "NON-CANON", "CANON"]
    for key, looks_right in (("fine", _is_red), ("also-fine", _is_green), ("weak", _is_red)):
        card = cards[key]["box"]
        edge = _pixel(shot, card["x"] + 3, card["y"] + card["h"] / 2)  # the 6px left border
        assert looks_right(edge), (key, edge)
    # every artifact's text is folded away until its summary is clicked
    assert not any(c["textShown"] for c in boxes["cards"])
    page.evaluate("document.querySelector('#artifact-1 details summary').id = 'open-text'")
    page.click("open-text")
    page.wait_until("document.querySelector('#artifact-1 pre.artifact-text').checkVisibility()")
    assert page.evaluate("document.querySelector('#artifact-1 details').open") is True
    assert page.console_problems() == []
