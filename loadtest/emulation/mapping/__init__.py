"""Lambda's SQS event source mapping, emulated: pollers (``dispatcher``), the run loop
(``runner``), SQS events as Lambda builds them (``events``) and receipt-handle redaction.
"""
