"""Lambda without Docker: functions are stored and invoked, and a function sink's Invoke
delivers what its code would.

Owns ``captured``, the replacement for moto's ``LambdaSimpleBackend.invoke``, and
``install``, which turns Docker off for Lambda and puts it in place. Must not touch any
function that is not a sink's (one without ``CAPTURE_ENV``) beyond answering as moto's
simple backend does, nor any other service.

Why: moto 5.2.5 runs a function's code in a Docker container, which the embedded backend
does not have; its simple backend (``lambda.use_docker = False``) stores functions and
answers every Invoke without running anything. A function sink
(``loadtest.aws.sinks``) is made so that what it was invoked with can be read back: its
code sends each event to its capture queue.

What changes: an accepted Invoke of a function whose environment names a capture queue
(``CAPTURE_ENV``) sends the request's payload to that queue of the same account and region,
exactly as sent (the function's code would send the event as JSON), before answering; an
Invoke of a function that does not exist is refused as Lambda refuses it
(``ResourceNotFoundException``). ``install`` is called by ``loadtest.backend.http.app``
only when the dispatcher builds Lambda's app.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

CAPTURE_ENV = "LOADTEST_CAPTURE_QUEUE_URL"
"""The variable that makes a function a sink (``loadtest.aws.sinks.CAPTURE_ENV``)."""

_LOCK = threading.Lock()


def captured(invoke: Callable[..., Any]) -> Callable[..., Any]:
    """``invoke`` that first delivers a sink function's payload to its capture queue."""

    def wrapper(
        self: Any,
        function_name: str,
        qualifier: str | None,
        body: Any,
        headers: Any,
        response_headers: Any,
    ) -> Any:
        from moto.sqs.models import sqs_backends

        fn = self.get_function(function_name, qualifier)  # refuses an unknown function
        url = (fn.environment_vars or {}).get(CAPTURE_ENV)
        if url:
            text = body.decode("utf-8") if isinstance(body, bytes) else str(body or "{}")
            queue_name = str(url).rstrip("/").rsplit("/", 1)[-1]
            sqs_backends[self.account_id][self.region_name].send_message(queue_name, text)
        return invoke(self, function_name, qualifier, body, headers, response_headers)

    wrapper.__wrapped__ = invoke  # type: ignore[attr-defined]
    return wrapper


def install() -> None:
    """Turn Docker off for Lambda and put ``captured`` in place (idempotent)."""
    from moto.awslambda_simple.models import LambdaSimpleBackend
    from moto.core.config import default_user_config

    with _LOCK:
        default_user_config.setdefault("lambda", {})["use_docker"] = False
        if not hasattr(LambdaSimpleBackend.invoke, "__wrapped__"):
            LambdaSimpleBackend.invoke = captured(LambdaSimpleBackend.invoke)  # type: ignore[method-assign]
            # moto's dashboard reads every tracked function's properties, and
            # ``docker_client`` raises without Docker: Lambda's models are not tracked.
            from loadtest.backend.core.untracked import LAZY_SERVICES, stop_tracking_instances

            stop_tracking_instances(LAZY_SERVICES)
