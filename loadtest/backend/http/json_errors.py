"""moto's JSON-protocol errors, built without the XML body they throw away.

Owns the replacement ``loadtest.backend.patches`` installs for
``moto.core.exceptions.JsonRESTError.__init__``: the same instance, attribute for
attribute, made in one step.

Why: moto's ``JsonRESTError`` (every DynamoDB error, JSON-protocol SQS's, ...) first runs
the XML error's ``__init__``, which renders an ``<ErrorResponse>`` document with
``xmltodict.unparse``, then replaces that description with the JSON one. In the benchmark
two conditional puts in three fail their condition, and the discarded XML was ~4% of the
backend's CPU.

Must not touch what the error carries (``error_type``, ``message``, ``description``,
``content_type``, the ``HTTPException`` state), nor any XML error (``RESTError`` keeps its
own ``__init__``), nor the subclasses' own ``__init__``. Installs nothing itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from moto.core.exceptions import _RESTError

_ErrorInit = Callable[..., None]


def without_xml(json_rest_error_init: _ErrorInit) -> _ErrorInit:
    """moto's ``JsonRESTError.__init__(self, error_type, message, _="", **kwargs)``
    without the XML description it overwrites (moto's own is kept as ``__wrapped__``)."""

    def init(self: _RESTError, error_type: str, message: str, _: str = "", **kwargs: Any) -> None:
        super(_RESTError, self).__init__()  # what _RESTError.__init__ starts with
        self.error_type = error_type
        self.message = message
        self.description = json.dumps({"__type": self.error_type, "message": self.message})
        self.content_type = "application/json"

    init.__wrapped__ = json_rest_error_init  # type: ignore[attr-defined]
    return init
