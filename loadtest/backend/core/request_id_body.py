"""moto's last step of every answer, without scanning a body that names no request id.

Owns the replacement ``loadtest.backend.patches`` installs for
``BaseResponse._enrich_response``: moto 5.2.5's own code, except that the regular
expression that writes the request id into an XML body's ``<RequestId>`` runs only on a
body that holds ``<RequestId>``.

Why: the expression (a look-behind for ``<RequestId>``, then ``.*``) is tried at every
position of every answer's body, JSON ones included, where it can never match: about
0.3 ms of CPU (timeit, on a shared machine) for the 6.5 KB answer of an SQS
``ReceiveMessage`` of 10, the largest answer a run gets per message.

Why it answers the same: the substitution replaces only text preceded by ``<RequestId>``,
so a ``str`` body without it comes back unchanged; a body of any other type made moto's
``re.sub`` raise, which moto ignores, leaving it unchanged too. The status is cast and the
request id drawn (from the same generator, into the same headers) as moto does, first.
``MIRRORED_SOURCE`` pins the moto source this mirrors; ``patches`` installs the
replacement only while the installed moto's source is that one.

Must not touch anything else an answer holds. Installs nothing itself.
"""

from __future__ import annotations

import contextlib
import inspect
import re
from typing import Any

from moto.core.responses import BaseResponse
from moto.utilities.aws_headers import gen_amzn_requestid_long

from loadtest.backend.core.mirrors import mirrors

MIRRORED_SOURCE = "86cd4a4051dd20e836fcc671792a66d3715be4c4f963705b2ae5f400bf0259d7"
"""SHA-256 of the source of moto 5.2.5's ``BaseResponse._enrich_response``."""

_REQUEST_ID_TAG = "<RequestId>"


def mirrors_installed_moto() -> bool:
    """Whether the installed moto's ``_enrich_response`` (behind any replacement installed,
    which names moto's as ``__wrapped__``) is the one mirrored."""
    function = inspect.getattr_static(BaseResponse, "_enrich_response").__func__
    return mirrors(function, MIRRORED_SOURCE)


def enrich_response(headers: dict[str, str], body: Any) -> tuple[dict[str, str], Any]:
    """moto's ``BaseResponse._enrich_response``; the body is searched only if it can match."""
    if "status" in headers:
        headers["status"] = str(headers["status"])
    request_id = gen_amzn_requestid_long(headers)
    if isinstance(body, str) and _REQUEST_ID_TAG in body:
        with contextlib.suppress(Exception):  # as moto: the body is left as it is
            body = re.sub(r"(?<=<RequestId>).*(?=<\/RequestId>)", request_id, body)
    return headers, body


enrich_response.__wrapped__ = BaseResponse._enrich_response  # type: ignore[attr-defined]
