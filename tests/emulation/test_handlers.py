"""loadtest.emulation.environment.handlers.parse_ref: variant names and handler references."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from loadtest.emulation.environment.handlers import BUILTIN_VARIANTS, HandlerRef, parse_ref
from loadtest.errors import HandlerRefError, InputError


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("conditional", "consumer.conditional"),
        ("read-then-write", "consumer.read_then_write"),
        ("unconditional", "consumer.unconditional"),
        ("publish-before-guard", "consumer.publish_before_guard"),
        ("publish-after-guard", "consumer.publish_after_guard"),
        ("outbox", "consumer.outbox"),
    ],
)
def test_builtin_names_map_to_consumer_modules(name: str, module: str) -> None:
    ref = parse_ref(name)
    assert ref == HandlerRef(variant=name, module=module, path=None, function="handler")
    assert ref.ref == f"{module}:handler"
    assert BUILTIN_VARIANTS[name] == f"{module}:handler"


def test_module_reference() -> None:
    ref = parse_ref("consumer.conditional:handler")
    assert ref == HandlerRef(
        variant="consumer.conditional:handler",
        module="consumer.conditional",
        path=None,
        function="handler",
    )


def test_module_reference_found_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_consumer_for_core_tests.py").write_text(
        "def handle(event, context):\n    return None\n"
    )
    monkeypatch.chdir(tmp_path)
    ref = parse_ref("my_consumer_for_core_tests:handle")
    assert ref.module == "my_consumer_for_core_tests"
    assert ref.function == "handle"
    assert str(tmp_path) not in sys.path


def test_absolute_file_reference(tmp_path: Path) -> None:
    handler_file = tmp_path / "my_handler.py"
    handler_file.write_text("def handler(event, context):\n    return None\n")
    ref = parse_ref(f"{handler_file}:handler")
    assert ref == HandlerRef(
        variant=f"{handler_file}:handler",
        module=None,
        path=str(handler_file.resolve()),
        function="handler",
    )
    assert ref.ref == f"{handler_file.resolve()}:handler"


def test_relative_file_reference_is_stored_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "worker.py").write_text("def run(event, context):\n    return None\n")
    monkeypatch.chdir(tmp_path)
    ref = parse_ref("pkg/worker.py:run")
    assert ref.variant == "pkg/worker.py:run"
    assert ref.path == str((tmp_path / "pkg" / "worker.py").resolve())
    assert Path(ref.path).is_absolute()
    assert ref.module is None
    assert ref.function == "run"


@pytest.mark.parametrize(
    "text",
    [
        "consumer.conditional",  # no colon
        "not-a-variant",
        ":handler",  # no module
        "consumer.conditional:",  # no function
        "consumer.conditional:not-valid",  # bad identifier
        "consumer.conditional:1handler",
        "my-module:handler",  # bad module name
        "consumer..conditional:handler",
    ],
)
def test_malformed_references_are_refused(text: str) -> None:
    with pytest.raises(HandlerRefError) as info:
        parse_ref(text)
    message = str(info.value)
    assert message.startswith(f"handler reference {text!r} is not valid; use a built-in variant (")
    assert "conditional, read-then-write, unconditional" in message
    assert "package.module:function, or path/to/file.py:function" in message


def test_missing_file_is_refused(tmp_path: Path) -> None:
    missing = tmp_path / "missing.py"
    with pytest.raises(HandlerRefError) as info:
        parse_ref(f"{missing}:handler")
    assert (
        str(info.value)
        == f"handler file {str(missing)!r} (in {f'{missing}:handler'!r}) does not exist"
    )


def test_missing_module_is_refused() -> None:
    with pytest.raises(HandlerRefError) as info:
        parse_ref("no_such_module_for_core_tests:handler")
    message = str(info.value)
    assert message.startswith(
        "handler module 'no_such_module_for_core_tests' "
        "(in 'no_such_module_for_core_tests:handler') cannot be found on the Python path"
    )


def test_missing_submodule_of_missing_package_is_refused() -> None:
    with pytest.raises(HandlerRefError) as info:
        parse_ref("no_such_package_for_core_tests.sub:handler")
    assert "'no_such_package_for_core_tests.sub'" in str(info.value)
    assert "cannot be found" in str(info.value)


def test_handler_ref_error_is_bad_input() -> None:
    assert issubclass(HandlerRefError, InputError)
    assert issubclass(HandlerRefError, ValueError)
