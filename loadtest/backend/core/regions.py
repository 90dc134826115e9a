"""The regions moto lists for a service, worked out once per service, without keeping the
botocore session that worked them out.

Owns the replacement ``loadtest.backend.patches`` installs for moto's
``AccountSpecificBackend._generate_regions``: moto's own function, its answer kept per
service name, and moto's ``AccountSpecificBackend.get_session`` cache emptied after each use.

Why: the first request for a service in an account makes moto list that service's regions
from a boto3 ``Session`` it keeps for the life of the process (``get_session`` is an
``lru_cache``), and that session keeps what it parsed to answer: botocore's
``endpoints.json`` and the service's whole ``service-2.json`` model, once for DynamoDB and
once more for SQS. Measured with tracemalloc in process, that was 8.9 MB of the backend's
11 MB of parsed JSON before the first message, for two lists of region names. moto keys its
own cache of the answer by the account's backend (one ``AccountSpecificBackend`` per account
and service), so each new account read the files again into the kept session.

Must not touch the answer: it is moto's function, run against moto's session (the same
``boto3.Session()``, the same data files, which do not change while the process runs), and
every caller gets the very list moto's cache would hand out (callers only copy from it).
The cost: a session, and its files, are read once per service rather than once per process.
Installs nothing itself.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from typing import Any

_GenerateRegions = Callable[[Any, str], list[str]]


def regions_once(generate_regions: _GenerateRegions, clear_session: Callable[[], None]) -> Any:
    """moto's unwrapped ``_generate_regions(self, service_name)``, its answer kept per
    service name; ``clear_session`` (moto's ``get_session.cache_clear``) runs after each
    computation, so the session it used can be freed."""
    regions_by_service: dict[str, list[str]] = {}
    lock = threading.Lock()

    def regions(self: Any, service_name: str) -> list[str]:
        with lock:
            answer = regions_by_service.get(service_name)
            if answer is None:
                try:
                    answer = generate_regions(self, service_name)
                finally:
                    clear_session()
                    gc.collect()  # a botocore session is a web of cycles: only gc frees it
                regions_by_service[service_name] = answer
        return answer

    regions.__wrapped__ = generate_regions  # type: ignore[attr-defined]
    return regions
