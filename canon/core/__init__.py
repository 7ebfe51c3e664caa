"""The pure core: constitution, rubric, artifact keys, prompts, scoring, statistics, evidence,
baselines and the comparison. Values in, values out; no I/O.

Layer: core. Imports only canon.errors and the standard library (scipy lazily, in
significance.py).
"""
