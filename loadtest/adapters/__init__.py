"""The adapters: everything that talks to an AWS API or starts a backend.

Owns sessions, clients, provisioning, teardown and the translation of
botocore's errors into loadtest's (``aws``), the producer that sends the
workload (``producer``), the embedded backend (``backend``) and the doctor
that checks a backend honours what loadtest relies on (``doctor``). Knows
nothing of verdicts or reports.
"""
