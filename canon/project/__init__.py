"""The files a project keeps: config and ``.env``, config edits, strict readers and atomic
writers, suites, contract and trace files, and loading the gates they name.

Layer: project. Imports errors, core, gates and judge (the judge spec a config names); never
check, monitor, report or an interface.
"""
