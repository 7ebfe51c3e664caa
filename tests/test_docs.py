"""The README is a landing page; its links and the --help epilogs lead to real pages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from canon.cli import _COMMANDS, main

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_stays_a_landing_page():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    for heading in ("## Install", "## Quick start", "## In CI", "## Read on"):
        assert heading in text
    assert "canon-testing" in text and "canon init" in text


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_points_at_a_file_that_exists(page):
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if "://" in target:
            continue
        assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


@pytest.mark.parametrize("command", [(), *((name,) for name in sorted(_COMMANDS))])
def test_every_docs_page_a_help_epilog_names_exists(command):
    output = CliRunner().invoke(main, [*command, "--help"]).output
    named = re.findall(r"docs/[a-z-]+\.md", output)
    assert named, f"canon {' '.join(command)} --help names no docs page"
    assert all((REPO / page).is_file() for page in named)
