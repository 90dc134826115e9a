"""``python -m loadtest`` runs the CLI."""

from loadtest.cli import main

main()
