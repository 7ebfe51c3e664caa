"""Renderings of results: text for people, JSON for machines, JUnit XML for CI, HTML to browse,
and OpenTelemetry evaluation events as plain values (``otel_events``), which ``otel_export``
sends over OTLP/HTTP for the commands and the pytest plugin.

Layer: report (values in, text out; no printing). Imports errors, core, gates (a trace's root
span, for the events' parent), project (reading a trace file) and check (the plan and the
run's usage); never an interface. ``otel_export`` is its one network edge.
"""
