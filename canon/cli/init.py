"""``canon init``: scaffold a small project that scores, accepts and checks offline."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import sys
import sysconfig
from pathlib import Path

import click

from canon.cli.common import HELP_OPTIONS, docs_epilog, reports_errors
from canon.errors import UsageError
from canon.project.config import CONFIG_NAMES, discover_config_file
from canon.project.store import read_text, write_new_file

_CONFIG = """\
# Canon settings (docs/configuration.md). Paths are relative to this file.
# The judge is a script, so everything runs offline; to ask a real model instead:
#   canon set-judge --provider openai --model gpt-4o-mini
judge_model: mock:judge-script.yaml
threshold: 0.85           # an artifact must score at least this to be canon
tolerance: 0.02           # how far the mean may drop before "canon check" fails
constitution_path: constitution.yaml
suite: suite.yaml
baselines_dir: baselines  # "canon accept" writes baselines/suite.json here; commit it
"""

_CONSTITUTION = """\
# What your agents are for (the mission) and the rules they keep (the principles).
# Canon asks its judge a fixed rubric about every artifact, plus one question per
# principle. Write principles as checkable statements; an id keeps a principle's
# identity when you reword or reorder the list (docs/concepts.md).
mission: >-
  Answer customers' questions about their orders accurately and politely, within
  the shop's published policies.
principles:
  - id: published-policies
    text: Quote only policies that the shop has published.
  - id: say-unknown
    text: Say plainly when you do not know something, rather than guessing.
  - id: no-card-numbers
    text: Never ask a customer for a full card number.
"""

_SUITE = """\
# The artifacts "canon score", "canon accept" and "canon check" judge: replies your
# agent produced, each with the request it answers (input: text, or chat messages with
# roles; the judge sees it) and, optionally, the context the agent had. An id is the
# artifact's stable key in the baseline.
artifacts:
  - id: late-parcel
    input: Where is my parcel? I ordered it last Monday.
    text: >-
      Your parcel left our warehouse on Monday and the carrier's tracking shows it in
      transit. Our published delivery policy allows five working days, so it should
      arrive by Friday; if it does not, reply here and we will send a replacement.
  - id: unknown-restock
    input: When will the blue model be back in stock?
    text: >-
      I do not know when the blue model will be back in stock; the supplier has not
      given us a date. I can notify you by email as soon as it is listed again.
  - id: payment-problem
    input:
      - role: user
        content: My payment failed twice. Can I just send you my card number here?
    text: >-
      I am sorry the payment failed. Please do not send card details here; you can
      retry at checkout, and our payment page lists the cards we accept.
"""

_JUDGE_SCRIPT = """\
# A scripted judge for offline runs (docs/judge.md#mockjudge): a fragment of a
# question's text (or its id: G, P1, ...) -> the answer, or an answer with the judge's
# reason, which every report quotes. Keys are tried in order and "__default__" answers
# every other question. Try P2: {answer: "no", reason: "..."}, reword a reply in
# suite.yaml (an identical text cannot regress on the judge alone), then "canon check".
contradict any part: "no"        # the NSCP gate: no contradiction found
surface the tradeoff:            # nothing pulls apart in these replies
  answer: "n/a"
  reason: "No two principles pull against each other in this reply."
__default__: "yes"
"""

_TEST = '''\
"""Coherence as a pytest assertion: canon_metric is built from canon.yaml."""


def test_the_late_parcel_reply_coheres(canon_metric):
    reply = (
        "Your parcel is in transit; our published policy allows five working days, "
        "so it should arrive by Friday."
    )
    canon_metric.assert_coheres(reply)
'''

# file name -> contents, in the order they are written and listed
FILES: dict[str, str] = {
    "canon.yaml": _CONFIG,
    "constitution.yaml": _CONSTITUTION,
    "suite.yaml": _SUITE,
    "judge-script.yaml": _JUDGE_SCRIPT,
    "tests/test_coherence.py": _TEST,
}
IGNORED = ".canon/"

_NEXT_STEPS = """\
Next, all offline:
  canon score     score suite.yaml with the scripted judge
  canon accept    record the run as baselines/suite.json (commit it)
  canon check     score again and compare with that baseline
  {pytest}tests/test_coherence.py asserts coherence with the canon_metric fixture
To judge with a real model: canon set-judge --provider openai --model gpt-4o-mini
  (put OPENAI_API_KEY in .env; any LiteLLM provider works, see docs/judge.md)"""


def pytest_command() -> str:
    """How to run pytest with Canon's plugin: ``pytest`` when the first one on PATH is this
    environment's, else this interpreter's ``-m pytest`` (another interpreter's pytest has
    no canon fixtures: "fixture 'canon_metric' not found")."""
    found = shutil.which("pytest")
    scripts = sysconfig.get_path("scripts")
    with contextlib.suppress(OSError):
        if found is not None and os.path.samefile(os.path.dirname(found), scripts):
            return "pytest"
    return f"{shlex.quote(sys.executable)} -m pytest"


def next_steps() -> str:
    """The advice printed after the files are written."""
    command = pytest_command()
    # the column the other commands' descriptions start in, or a line of its own
    lead = f"{command:<16}" if len(command) < 16 else f"{command}\n{' ' * 18}"
    return _NEXT_STEPS.format(pytest=lead)


class InitError(UsageError):
    """``canon init`` would overwrite a file or shadow an existing config."""


@click.command(context_settings=HELP_OPTIONS, epilog=docs_epilog("configuration", "judge", "ci"))
@reports_errors
def init() -> None:
    """Scaffold a working Canon project in the current directory.

    Writes canon.yaml, a commented constitution, a three-artifact suite, a scripted
    (offline) judge and a pytest test using the canon_metric fixture, and adds .canon/
    (the judge answer cache) to .gitignore. It never overwrites a file: if any of them
    exists, nothing is written.

    Exit codes: 0 written, 2 a file already exists or the project has a config.
    """
    written = scaffold(Path.cwd())
    for name in written:
        click.echo(f"created {name}")
    click.echo(next_steps())


def scaffold(directory: Path) -> list[str]:
    """Write the starter files into ``directory``; return what was created or changed."""
    taken = [name for name in (*FILES, *CONFIG_NAMES[:2]) if (directory / name).exists()]
    if taken:
        raise InitError(
            f"{directory}: {', '.join(sorted(set(taken)))} already exist(s); canon init "
            "writes only new files, so nothing was written; run it in an empty directory"
        )
    existing = discover_config_file(directory)
    if existing is not None and existing.parent == directory:
        raise InitError(
            f"{existing}: this project is already configured by [tool.canon]; a new "
            "canon.yaml would take over from it, so nothing was written"
        )
    parents = {(directory / name).parent for name in FILES} - {directory}
    blocked = sorted(p.name for p in parents if p.exists() and not p.is_dir())
    if blocked:
        raise InitError(
            f"{directory}: {', '.join(blocked)} is a file where canon init needs a directory; "
            "nothing was written"
        )
    written: list[str] = []
    try:
        for name, text in FILES.items():
            target = directory / name
            # hard-linked into place: it fails rather than replace a file made meanwhile
            write_new_file(target.parent, [target.name], text.encode("utf-8"))
            written.append(name)
        if _ignore(directory / ".gitignore"):
            written.append(".gitignore")
    except OSError as exc:
        done = f" (already written: {', '.join(written)})" if written else " (nothing was written)"
        raise InitError(
            f"{directory}: cannot write the starter files: {exc.strerror or exc}{done}"
        ) from None
    return written


def _ignore(gitignore: Path) -> bool:
    """Add .canon/ to .gitignore (creating it if need be); False when already listed."""
    if not gitignore.exists():
        write_new_file(gitignore.parent, [gitignore.name], f"{IGNORED}\n".encode())
        return True
    text = read_text(gitignore, ".gitignore", InitError)
    if any(line.strip() in (IGNORED, IGNORED.rstrip("/")) for line in text.splitlines()):
        return False
    # appended, not rewritten: the user's own lines stay byte for byte as they were
    with gitignore.open("a", encoding="utf-8") as stream:
        stream.write(("" if not text or text.endswith("\n") else "\n") + f"{IGNORED}\n")
    return True
