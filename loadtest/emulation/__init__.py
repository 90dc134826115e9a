"""The Lambda emulation: Lambda's SQS event source mapping, run on this machine.

Owns the pollers that turn queue messages into SQS events (``runner``,
``events``), the execution environments that run a handler one invocation
at a time in its own process (``environments``, ``envhost``, ``envguard``),
the write observer inside them (``observer``), handler references
(``handlers``) and what this machine can hold (``capacity``). It talks to
SQS only through clients it is given; it never provisions anything.

Kept cheap to import: each execution environment imports ``envhost`` by module name.
"""
