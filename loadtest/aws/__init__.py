"""The AWS boundary: sessions, clients, the run's resources, their end state and error translation.

Owns everything loadtest says to SQS, DynamoDB and the control plane through boto3 and
aioboto3 (``clients``), the translation of botocore's errors (``errors``), FIFO provisioning
(``fifo``), reading a run's end state (``endstate``), loadtest's User-Agent (``user_agent``) and
the kept connections it speaks to its own backend by hand (``kept_http``).
Knows nothing of verdicts or reports.
"""
