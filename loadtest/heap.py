"""The collector's full passes during a long phase of a process: ``frozen_heap``.

A full collection walks every container object the process holds. In a run's harness
those are mostly what was there before the messages flowed (the imported modules,
botocore's models, the run's set-up); in the embedded backend, moto's modules and
models. ``frozen_heap`` moves the objects alive when a phase starts out of the
collector's reach (``gc.freeze``) and hands them back when it ends (``gc.unfreeze``), so
the full collections that fall inside the phase walk only what the phase made::

    harness, 3,000 messages   set-up | messages flow ......... | check
    without                            full pass: ~100k objects
    frozen_heap                        full pass: what the flow made

Nothing is freed later than it would be but a cycle that was already garbage when the
phase started (it waits for the first full collection after the phase). A process that
froze objects itself (``gc.get_freeze_count()`` above 0, a pre-fork server's own use) is
left alone: its frozen objects are never handed back here.

Owns ``frozen_heap`` and nothing else; must not collect (``gc.collect``) or change the
collector's thresholds.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Keep the objects alive now out of full collections until the block ends."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
