"""The embedded backend's SNS: a FIFO topic's deduplication (``fifo``) and one signing
certificate per subscription (``signing``), installed when SNS is first used."""
