"""Renderings of results: text for people, JSON for machines, JUnit XML for CI, HTML to browse,
and OpenTelemetry evaluation events as plain values (``otel_events``; ``canon.cli`` sends them).

Layer: report (values in, text out; no printing). Imports errors, core, gates (a trace's root
span, for the events' parent) and check (the plan and the run's usage); never an interface.
"""
