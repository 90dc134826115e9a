"""A first scenario for a handler, as ``loadtest new`` writes it: ``writer`` (the commented
scenario), ``key`` (the table key read from a dry run) and ``sample`` (a sample message as a
body template)."""
