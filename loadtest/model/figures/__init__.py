"""A run's figures and the rules over them: latencies, the arrival rate, cost, thresholds.

Owns ``metrics`` (HdrHistograms of microseconds), ``rate`` (whether a run achieved the
arrival rate it asked for), ``cost`` and ``price_tables`` (billable units, and the committed
tables in ``prices/``), ``thresholds`` and ``threshold_grammar`` (k6-style pass/fail
expressions). Never imported by the scenario, the workload or the history.
"""
