"""The library's calls besides a run: a first scenario for a handler, the doctor's data plane.

Owns ``new_scenario`` (the commented scenario ``loadtest new`` writes, from the
handler's source and, with a sample message, a dry run of it) and
``doctor_data_plane`` (the doctor's event source mapping checks, where they can
run). Both are re-exported by ``loadtest.api``. Bad input raises ``InputError``;
prints nothing, never exits.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path

from loadtest.aws.clients import BackendKind
from loadtest.doctor.checks import CheckResult
from loadtest.emulation.environment.handlers import parse_ref
from loadtest.errors import InputError
from loadtest.model.advice.handler_source import (
    environment_reads,
    hardcoded_tables,
    id_attribute,
    reports_item_failures,
)
from loadtest.model.advice.scaffold.writer import sample_template, scenario_text


def new_scenario(
    handler: str, *, sample_message: str | Path | None = None, id_field: str | None = None
) -> str:
    """The commented scenario ``loadtest new`` writes for ``handler``: the body template
    from ``sample_message`` (a JSON file: a body, an SNS notification, an EventBridge event
    or a Lambda SQS event), ``{id}`` where ``id_field`` is, the environment variables and
    table names the handler's source reads, and, with a sample, the table's key as a dry
    run of the handler on one message shows it (``loadtest.engine.dry_run``; the handler's
    code runs). Bad input raises ``InputError``."""
    ref = parse_ref(handler)
    origin = ref.path or _module_file(str(ref.module))
    try:
        source = Path(origin).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"the handler's source {origin!r} could not be read: {exc}") from exc
    sample = None
    if sample_message is not None:
        path = Path(sample_message)
        try:
            message = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"sample message {str(path)!r} could not be read: {exc}") from exc
        except ValueError as exc:
            raise InputError(f"sample message {str(path)!r} is not JSON: {exc}") from exc
        sample = sample_template(message, id_field, str(path))
    elif id_field is not None:
        raise InputError("--id-field names a field of the sample message: give --sample-message")
    write = functools.partial(
        scenario_text,
        handler,
        sample,
        None if sample_message is None else str(sample_message),
        environment_reads(source, origin),
        tables=hardcoded_tables(source, origin),
        item_failures=reports_item_failures(source, origin),
        stored_as=None if sample is None else id_attribute(source, sample.id_key, origin),
    )
    if sample is None:
        return write()
    # A dry run of the scenario as written shows the table key the handler writes.
    from loadtest.engine.dry_run import first_write_key
    from loadtest.model.scenario.loading import parse_text

    guessed = parse_text(write(), "the scenario `loadtest new` writes", "new")
    return write(table_key=first_write_key(guessed, ref))


def _module_file(module: str) -> str:
    import importlib.util
    import os
    import sys

    sys.path.insert(0, os.getcwd())
    try:
        spec = importlib.util.find_spec(module)
    finally:
        sys.path.remove(os.getcwd())
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise InputError(f"the source of handler module {module!r} cannot be found")
    return spec.origin


def doctor_data_plane(
    kind: BackendKind,
    endpoint_url: str | None,
    *,
    on_check: Callable[[CheckResult], None] | None = None,
) -> tuple[list[CheckResult], str | None]:
    """The doctor's data-plane checks (``loadtest.doctor.mapping``) where they can run.

    On loadtest's own backend (embedded, or ``loadtest serve`` behind ``endpoint_url``)
    against the emulated event source mapping; on another endpoint that serves Lambda
    through a deployed probe function and mapping. Returns the results and, when the
    checks did not run, why (a sentence for the user). Never against real AWS: that
    would deploy functions in the user's account.
    """
    import anyio

    from loadtest.aws.clients import Target, served_sqs_requests

    if kind is BackendKind.AWS or not endpoint_url:
        return [], "the data-plane checks run on an endpoint (--endpoint-url) or embedded only"
    target = Target.resolve(BackendKind.ENDPOINT, endpoint_url)
    if anyio.run(served_sqs_requests, target, backend="asyncio") is not None:
        from loadtest.engine.doctor_probe import run_mapping_checks as emulated

        return emulated(endpoint_url, on_check=on_check), None
    from loadtest.deploy.doctor_probe import run_mapping_checks as deployed
    from loadtest.deploy.doctor_probe import serves_lambda

    if not serves_lambda(endpoint_url):
        return [], (
            f"{endpoint_url} serves no Lambda: the data-plane checks (mapping concurrency, "
            "redelivery in flight, partial batch responses, FIFO order) did not run"
        )
    return deployed(endpoint_url, on_check=on_check), None
