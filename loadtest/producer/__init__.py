"""The producer: the workload's messages sent on schedule (``send``), by one or several
processes splitting one schedule (``processes``).
"""
