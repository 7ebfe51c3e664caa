"""Allow ``python -m canon.cli``."""

from canon.cli import main

main(prog_name="canon")
