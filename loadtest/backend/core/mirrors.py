"""Whether a function of the installed moto is the source one of loadtest's mirrors copies.

Owns the one test every mirror is installed behind (``mirrors``): the SHA-256 of the
function's source, found behind any replacement installed (which names moto's as
``__wrapped__``), equals the digest pinned beside the mirror. A moto whose function
differs keeps its own. Installs nothing itself.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable
from typing import Any


def mirrors(function: Callable[..., Any], digest: str) -> bool:
    """Whether ``function`` (unwrapped) has the source whose SHA-256 is ``digest``."""
    source = inspect.getsource(inspect.unwrap(function))
    return hashlib.sha256(source.encode()).hexdigest() == digest
