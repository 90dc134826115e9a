"""What happened in a run: its history of records and the observation protocol.

Owns ``log`` (``History``: the run's logs and record names), ``records`` (the frozen
records), ``frames`` (compressed frames and codecs), ``keys`` (item keys as text) and
``observation`` (what the write observer sends out of an execution environment). Shipped in
the observer's Lambda layer: imports nothing of the model but ``loadtest.model.dynamodb``.
"""
