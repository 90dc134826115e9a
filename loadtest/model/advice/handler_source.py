"""What a handler's source says about how it is deployed, read without importing it.

Owns reading a handler's Python source with ``ast`` (never importing or running it): the
environment variables it reads (``environment_reads``: ``os.environ["X"]``,
``os.environ.get("X")``, ``os.getenv("X")`` and the same through ``from os import
environ, getenv``), the table names it hard-codes (``hardcoded_tables``), whether it
answers with partial batch responses (``reports_item_failures``), the attribute it stores
a message's business id under (``id_attribute``). The run resource a variable's name
suggests is ``loadtest.model.scenario.placeholders.suggested_value``'s, re-exported here.
Pure: the caller reads the file.
``loadtest.model.advice.scaffold.writer`` writes the scenario from these.
"""

from __future__ import annotations

import ast

from loadtest.errors import InputError
from loadtest.model.scenario.placeholders import suggested_value as suggested_value


def _parse(source: str, filename: str) -> ast.Module:
    try:
        return ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise InputError(f"{filename}: not valid Python ({exc.msg}, line {exc.lineno})") from exc


def environment_reads(source: str, filename: str = "<handler>") -> list[str]:
    """The names of the environment variables ``source`` reads, in order of first reading.

    A name given as a module-level string constant (``TABLE_VAR = "TABLE"``) is resolved;
    a name computed at run time cannot be known and is passed over.
    """
    tree = _parse(source, filename)
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }

    def name_of(node: ast.expr | None) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return constants.get(node.id)
        return None

    def is_environ(node: ast.expr) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
            isinstance(node, ast.Name) and node.id == "environ"
        )

    found: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Subscript) and is_environ(node.value):
            name = name_of(node.slice)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr in ("get", "setdefault")
                and is_environ(func.value)
            ) or (
                (isinstance(func, ast.Attribute) and func.attr == "getenv")
                or (isinstance(func, ast.Name) and func.id == "getenv")
            ):
                name = name_of(node.args[0])
        if name and isinstance(node, ast.expr):
            found.append((node.lineno, node.col_offset, name))
    names: list[str] = []
    for _, _, name in sorted(found):
        if name not in names:
            names.append(name)
    return names


def hardcoded_tables(source: str, filename: str = "<handler>") -> list[str]:
    """Table names ``source`` writes literally: ``.Table("Orders")``, ``TableName="Orders"``."""
    tree = _parse(source, filename)
    names: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        candidates: list[ast.expr] = [k.value for k in node.keywords if k.arg == "TableName"]
        if isinstance(node.func, ast.Attribute) and node.func.attr == "Table" and node.args:
            candidates.append(node.args[0])
        for arg in candidates:
            if (
                isinstance(arg, ast.Constant)
                and isinstance(arg.value, str)
                and arg.value not in names
            ):
                names.append(arg.value)
    return names


def _reads_field(node: ast.expr, field: str) -> bool:
    """Whether ``node`` is the message's ``field`` itself: ``x["field"]``, ``x.get("field")``
    or, in the client API's form, ``{"S": x["field"]}``."""
    if isinstance(node, ast.Dict) and len(node.values) == 1:
        return _reads_field(node.values[0], field)
    if isinstance(node, ast.Subscript):
        key = node.slice
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and node.args
    ):
        key = node.args[0]
    else:
        return False
    return isinstance(key, ast.Constant) and key.value == field


def id_attribute(source: str, field: str, filename: str = "<handler>") -> str | None:
    """The attribute ``source`` stores the message's ``field`` under, as the key of an item
    it writes or reads: ``put_item(Item={"id": order["orderId"], ...})`` or ``Key={...}``
    gives ``"id"``. None when no literal item names it (the id is computed, or the item is
    built elsewhere)."""
    tree = _parse(source, filename)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if keyword.arg not in ("Item", "Key") or not isinstance(keyword.value, ast.Dict):
                continue
            for key, value in zip(keyword.value.keys, keyword.value.values, strict=True):
                if (
                    isinstance(key, ast.Constant)
                    and isinstance(key.value, str)
                    and _reads_field(value, field)
                ):
                    return key.value
    return None


_PARTIAL_BATCH = frozenset({"batchItemFailures", "process_partial_response", "BatchProcessor"})


def reports_item_failures(source: str, filename: str = "<handler>") -> bool:
    """Whether ``source`` answers with a partial batch response (``batchItemFailures``, or
    Powertools' batch processing), which counts only with ReportBatchItemFailures."""
    tree = _parse(source, filename)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in _PARTIAL_BATCH:
            return True
        if isinstance(node, ast.Name) and node.id in _PARTIAL_BATCH:
            return True
        if isinstance(node, ast.alias) and node.name in _PARTIAL_BATCH:
            return True
    return False


RUNTIME_VARIABLES = frozenset(
    {
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ENDPOINT_URL",
        "AWS_LAMBDA_FUNCTION_NAME",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
        "AWS_LAMBDA_FUNCTION_VERSION",
        "AWS_LAMBDA_LOG_GROUP_NAME",
        "AWS_LAMBDA_LOG_STREAM_NAME",
        "AWS_EXECUTION_ENV",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "LAMBDA_TASK_ROOT",
        "LAMBDA_RUNTIME_DIR",
        "_HANDLER",
        "TABLE_NAME",
    }
)
"""Variables every execution environment already has (Lambda's own, and ``TABLE_NAME``
naming the run's table)."""
