"""The embedded backend's SNS: a FIFO topic's deduplication, installed when SNS is first used."""
