"""Decision-model wires: one call per response carries every question, answers come back as
probabilities.

A decision model (TypeSafe's Jev on the System One wire, OpenAI's Decisions API) reads one
*state* and many typed questions and returns, per question, a distribution over the offered
options. This package is the client layer only: ``asking`` builds the state and the
questions from a constitution, an artifact and rubric questions; ``validate`` checks every
answer before it counts; ``systemone`` and ``openai_decisions`` are the two wire formats,
registered in ``wires``; ``client`` sends one call with Canon's retries and limiter;
``prices`` prices the documented models. Nothing here is wired into scoring yet.

Layer: judge (network). Imports canon.errors, canon.core and canon.judge; nothing above.
"""
