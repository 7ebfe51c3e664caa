"""The offline policy playground: a loopback web page that evaluates policies with the library.

Layer: playground (a loopback server). Imports errors and gates; the CLI starts it.
"""

from canon.playground.errors import PlaygroundError
from canon.playground.evaluation import evaluate_texts
from canon.playground.server import MAX_BODY_BYTES, PlaygroundServer
from canon.playground.smoke import SmokeReport, run_smoke_checks

__all__ = [
    "MAX_BODY_BYTES",
    "PlaygroundError",
    "PlaygroundServer",
    "SmokeReport",
    "evaluate_texts",
    "run_smoke_checks",
]
