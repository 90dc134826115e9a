"""The embedded backend's SQS: the indexed message store, the compact message, and the SQS
and FIFO behaviour moto gets wrong, patched.
"""
