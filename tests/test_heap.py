"""The objects frozen for a long phase, and handed back when it ends."""

from __future__ import annotations

import gc

import pytest

from loadtest.heap import frozen_heap


def test_the_objects_alive_at_the_start_are_frozen_until_the_block_ends() -> None:
    assert gc.get_freeze_count() == 0
    kept = [{"alive": True}]
    with frozen_heap():
        assert gc.get_freeze_count() > 0
        made = [{"made": True}]
        assert gc.is_tracked(made)
    assert gc.get_freeze_count() == 0
    assert kept and made


def test_the_objects_are_handed_back_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError), frozen_heap():
        raise RuntimeError("the phase failed")
    assert gc.get_freeze_count() == 0


def test_objects_the_process_froze_itself_stay_frozen() -> None:
    # The count falls as frozen objects die (another thread's among them), so what is
    # asserted is that nothing more was frozen and nothing handed back.
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        made = [{"made": n} for n in range(1000)]
        with frozen_heap():
            assert gc.get_freeze_count() < frozen + len(made)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
