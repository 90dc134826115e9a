"""The execution environment's view of the handler, as Lambda's Python runtime gives it.

Expected messages and types from aws/aws-lambda-python-runtime-interface-client:
awslambdaric/bootstrap.py (``_get_handler``) and awslambdaric/lambda_context.py.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadtest.emulation.environment.child_host import (
    FunctionIdentity,
    HandlerLoadError,
    LambdaContext,
    _exit_status,
    load_handler,
)
from loadtest.emulation.environment.handlers import HandlerRef
from loadtest.emulation.environment.parent_config import FunctionConfig
from loadtest.emulation.environment.parent_replies import exit_reason


@pytest.fixture
def clean_imports(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


@pytest.mark.usefixtures("clean_imports")
@pytest.mark.parametrize(
    ("source", "error_type", "message"),
    [
        (
            "import no_such_module_for_envhost\n",
            "Runtime.ImportModuleError",
            "Unable to import module 'probe_import': No module named 'no_such_module_for_envhost'",
        ),
        (
            "def handler(event, context)\n    return 1\n",
            "Runtime.UserCodeSyntaxError",
            "Syntax error in module 'probe_import': expected ':'",
        ),
        (
            "def other(event, context):\n    return 1\n",
            "Runtime.HandlerNotFound",
            "Handler 'handler' missing on module 'probe_import'",
        ),
    ],
)
def test_import_failures_are_named_as_the_runtime_names_them(
    tmp_path: Path, source: str, error_type: str, message: str
) -> None:
    path = tmp_path / "probe_import.py"
    path.write_text(source)
    with pytest.raises(HandlerLoadError) as failed:
        load_handler(f"{path}:handler")
    assert failed.value.error_type == error_type
    assert str(failed.value).startswith(message)


def test_the_context_has_the_runtimes_fields_and_types(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "AWS_LAMBDA_FUNCTION_NAME": "orders",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_GROUP_NAME": "/aws/lambda/orders",
        "AWS_LAMBDA_LOG_STREAM_NAME": "2026/01/01/[$LATEST]abc",
        "AWS_REGION": "eu-west-1",
    }.items():
        monkeypatch.setenv(name, value)
    context = LambdaContext("r-1", 3000, FunctionIdentity.from_environ())
    assert context.aws_request_id == "r-1"
    assert context.memory_limit_in_mb == "256"  # a string, read from the environment
    assert (context.function_name, context.function_version) == ("orders", "$LATEST")
    assert context.log_group_name == "/aws/lambda/orders"
    assert context.log_stream_name == "2026/01/01/[$LATEST]abc"
    assert context.invoked_function_arn == "arn:aws:lambda:eu-west-1:000000000000:function:orders"
    assert context.client_context is None and context.tenant_id is None
    assert context.identity.cognito_identity_id is None
    assert context.identity.cognito_identity_pool_id is None
    assert 0 < context.get_remaining_time_in_millis() <= 3000


@pytest.mark.parametrize(("code", "status"), [(None, 0), (0, 0), (3, 3), ("bye", 1), (256, 0)])
def test_sys_exit_ends_the_process_with_its_status(code: object, status: int) -> None:
    assert _exit_status(code) == status


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (0, "Runtime exited without providing a reason"),
        (3, "Runtime exited with error: exit status 3"),
        (-9, "Runtime exited with error: signal: killed"),
        (-11, "Runtime exited with error: signal: segmentation fault"),
    ],
)
def test_an_ended_process_is_a_runtime_exit_error(code: int, message: str) -> None:
    assert exit_reason(code, 128, "r-1") == f"Runtime.ExitError: RequestId: r-1 Error: {message}"
    assert exit_reason(99, 128, "r-1").startswith("Runtime.OutOfMemory")


def test_the_environment_has_the_variables_lambda_defines(tmp_path: Path) -> None:
    handler = HandlerRef(
        variant="mine", module=None, path=str(tmp_path / "app.py"), function="main"
    )
    config = FunctionConfig(
        handler=handler,
        function_name="orders-fn",
        table_name="orders",
        region="eu-west-1",
        endpoint_url=None,
        memory_mb=256,
        timeout_s=30,
    )
    env = config.environ()
    assert {k: env[k] for k in config.lambda_environ()} == {
        "AWS_LAMBDA_FUNCTION_NAME": "orders-fn",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_GROUP_NAME": "/aws/lambda/orders-fn",
        "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
        "AWS_EXECUTION_ENV": f"AWS_Lambda_python{sys.version_info[0]}.{sys.version_info[1]}",
        "_HANDLER": "app.main",
        "LAMBDA_TASK_ROOT": str(tmp_path),
        "TZ": ":UTC",
    }
    assert (env["AWS_REGION"], env["AWS_DEFAULT_REGION"]) == ("eu-west-1", "eu-west-1")
