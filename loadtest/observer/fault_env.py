"""The scenario's faults as the environment variables an execution environment reads.

The only writer of those variables: the local runtime (``loadtest.engine``) and the
deploy plan (``loadtest.deploy.deploy_plan``) both take them from here. Their names
live in ``loadtest.observer.layer_environment``; their readers are the observer layer's
entry point (``loadtest.observer.lambda_entry``) and the local environment
(``loadtest.emulation.environment.child_host``). Pure: it reads no environment itself.
"""

from __future__ import annotations

from loadtest.errors import InputError
from loadtest.model.scenario.settings import Faults
from loadtest.observer.layer_environment import (
    CRASH_AFTER_WRITE_ENV,
    CRASH_MID_HANDLER_ENV,
    FAULT_SEED_ENV,
    HANDLER_DURATION_ENV,
    HANDLER_JITTER_ENV,
    POINT_FAULTS_ENV,
    RACE_WINDOW_ENV,
)

LOCAL_ONLY = {
    CRASH_AFTER_WRITE_ENV: "crash_after_write (--crash-after-write)",
    POINT_FAULTS_ENV: "point faults (faults.point, --point-fault)",
}
"""Faults only a local environment can inject, by variable, with the scenario field and
option that ask for them: a deployed function's runtime owns the point after the handler
returned, its timeout and its acknowledgements."""


def fault_environment(faults: Faults, *, seed: int | None = None) -> dict[str, str]:
    """The faults that are on, by variable name; with ``seed``, the seed of the local
    environments' fault draws too (a deployed function draws unseeded)."""
    values = {
        HANDLER_DURATION_ENV: faults.handler_duration_ms,
        HANDLER_JITTER_ENV: faults.handler_jitter_ms,
        RACE_WINDOW_ENV: faults.race_window_ms,
        CRASH_AFTER_WRITE_ENV: faults.crash_after_write,
        CRASH_MID_HANDLER_ENV: faults.crash_mid_handler,
    }
    environment = {name: str(value) for name, value in values.items() if value}
    if faults.point:
        environment[POINT_FAULTS_ENV] = ",".join(f"{n}={p!r}" for n, p in faults.point)
    if seed is not None:
        environment[FAULT_SEED_ENV] = str(seed)
    return environment


def deployed_fault_environment(faults: Faults) -> dict[str, str]:
    """The faults a deployed function's layer injects (see ``LOCAL_ONLY``)."""
    return {k: v for k, v in fault_environment(faults).items() if k not in LOCAL_ONLY}


def refuse_local_only(faults: Faults) -> None:
    """InputError naming the scenario's faults a deployed function cannot inject: a run
    without them would pass for want of the fault it was asked to survive."""
    asked = [LOCAL_ONLY[name] for name in fault_environment(faults) if name in LOCAL_ONLY]
    if asked:
        raise InputError(
            f"{' and '.join(asked)} {'is' if len(asked) == 1 else 'are'} injected by local "
            "execution environments only; a "
            "deployed function's runtime owns the moment after its handler returns. Run "
            "without --target aws / --deploy / --function, or use crash_mid_handler, which the "
            "observer layer injects on Lambda too"
        )
