"""Allow ``python -m canon``, the same as the ``canon`` command."""

from canon.cli import main

main(prog_name="canon")
