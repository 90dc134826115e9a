"""``loadtest doctor``: does a backend behave the way loadtest's conclusions assume?

Owns the checks (``checks``: names, results), their SQS, FIFO and DynamoDB probes
(``sqs``, ``fifo``, ``dynamodb``), the event source mapping's data-plane measurements
(``mapping``) and running them all (``checkup``).
"""
