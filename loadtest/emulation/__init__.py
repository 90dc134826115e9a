"""The Lambda emulation: Lambda's SQS event source mapping, run on this machine.

Owns the mapping's pollers, which turn queue messages into SQS events and hand them to
environments (``mapping``); the execution environments that run a handler one invocation at
a time in its own process, parent side and child side (``environment``); and the explorer's
step-by-step runs of a few deliveries (``explore``). The write observer that runs inside the
environments is ``loadtest.observer`` (it also ships in the Lambda layer). It talks to SQS only
through clients it is given; it never provisions anything.

Kept cheap to import: each execution environment imports ``environment.child_host`` by module name.
"""
