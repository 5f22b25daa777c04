"""``python -m toolscout`` runs the CLI."""

from toolscout.cli import main

main()
