"""The options the commands share, and one option per scenario override.

The override options are derived from the scenario's fields (their
``Override`` metadata), never listed by hand.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from loadtest.aws.target import BackendKind
from loadtest.cli.console import Exit, fail
from loadtest.errors import InputError
from loadtest.model.scenario.function_config import PLACEHOLDERS
from loadtest.model.scenario.loading import POINT_FAULTS_OVERRIDE as POINTS_OVERRIDE
from loadtest.model.scenario.loading import Override, override_fields
from loadtest.model.scenario.placeholders import sink_forms
from loadtest.model.scenario.settings import POINT_FAULTS


class TargetChoice(StrEnum):
    EMBEDDED = "embedded"
    AWS = "aws"


def target_kind(endpoint_url: str | None, target: TargetChoice) -> BackendKind:
    if endpoint_url and target is TargetChoice.AWS:
        fail(Exit.BAD_INPUT, "--endpoint-url and --target aws exclude each other; give one")
    if target is TargetChoice.AWS:
        return BackendKind.AWS
    return BackendKind.ENDPOINT if endpoint_url else BackendKind.EMBEDDED


def library_target(endpoint_url: str | None, target: TargetChoice) -> str:
    """The library's ``target`` for the command line's options (refusing both at once)."""
    return target_kind(endpoint_url, target).value


# --- options shared by run and compare ---------------------------------------

ScenarioArg = Annotated[
    str,
    typer.Argument(
        help="A built-in scenario name (see `loadtest scenarios`) or a path to a TOML file."
    ),
]
SeedOpt = Annotated[
    int | None, typer.Option(help="Seed for the workload (default: the scenario's).")
]
EndpointOpt = Annotated[
    str | None,
    typer.Option(
        "--endpoint-url",
        help="An AWS-compatible endpoint (moto, LocalStack, DynamoDB Local…) instead of the embedded backend.",
    ),
]
TargetOpt = Annotated[
    TargetChoice,
    typer.Option(
        "--target", help="embedded (default) or aws (real AWS, boto3's credential chain)."
    ),
]
JsonOpt = Annotated[
    Path | None,
    typer.Option(
        "--json",
        metavar="FILE",
        help="Write the JSON report here (default: reports/NAME-TIME.json, with an .html beside it).",
    ),
]
OutOpt = Annotated[
    Path | None,
    typer.Option("--out", metavar="DIR", help="Directory for report files (default: ./reports)."),
]
ThresholdOpt = Annotated[
    list[str],
    typer.Option(
        "--threshold",
        metavar="EXPR",
        help="Pass/fail rule, repeatable, k6-style: 'duplicate_writes == 0', "
        "'end_to_end.p99 < 250ms', 'conditional: throughput.messages_per_s > 100'.",
    ),
]
HtmlOpt = Annotated[
    Path | None,
    typer.Option("--html", metavar="FILE", help="Also write a self-contained HTML report."),
]
MarkdownOpt = Annotated[
    Path | None,
    typer.Option(
        "--markdown",
        metavar="FILE",
        help="Also write a Markdown summary (CI job summary, PR comment).",
    ),
]
HgrmOpt = Annotated[
    Path | None,
    typer.Option(
        "--hgrm",
        metavar="DIR",
        help="Also write HdrHistogram percentile distributions (.hgrm, in ms) per run and latency.",
    ),
]
JunitOpt = Annotated[
    Path | None,
    typer.Option(
        "--junit", metavar="FILE", help="Also write JUnit XML: one test case per threshold."
    ),
]
HistoryOpt = Annotated[
    Path | None,
    typer.Option(
        "--history",
        metavar="FILE",
        help="Write the run's history here as it goes (flushed every second), so a run "
        "killed hard still leaves what it measured: `loadtest report FILE` judges it "
        "(default for a local run: beside the JSON report as .history, removed when the "
        "run ends normally; a deployed run writes one only when asked, with this or "
        "--keep-history).",
    ),
]
KeepHistoryOpt = Annotated[
    bool,
    typer.Option(
        "--keep-history",
        help="Keep the history beside the report when the run ends normally (a deployed "
        "run: write one there).",
    ),
]
QuietOpt = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress and no summary; the exit code tells.")
]
CleanupOpt = Annotated[
    float | None,
    typer.Option(
        "--cleanup-timeout",
        metavar="S",
        min=1,
        help="Seconds each cleanup step and the end-state read may take before loadtest gives up "
        "and names what it could not delete (default: 20).",
    ),
]


# --- scenario overrides, one option per field that carries an ``Override`` ------

_TYPES: dict[str, type] = {"int": int, "float": float, "bool": bool}
"""Override field types by annotation; any other (a StrEnum) is taken as text, checked by the model."""


def option_name(field: str) -> str:
    """``visibility_timeout_s`` -> ``visibility_timeout``: the option drops the unit."""
    for suffix in ("_per_s", "_ms", "_s"):
        if field.endswith(suffix):
            return field.removesuffix(suffix)
    return field


def _axis_metavar(field: str) -> str:
    unit = "MS" if field.endswith("_ms") else "S" if field.endswith("_s") else "N"
    return f"{unit},{unit},..."


def _override_annotation(field: str, kind: type, how: Override, *, axis: bool) -> Any:
    flag = "--" + option_name(field).replace("_", "-")
    if axis:
        option = typer.Option(flag, metavar=_axis_metavar(field), help=how.sweep_help)
        return Annotated[str | None, option]
    if kind is bool:
        negative = "--no-" + flag.removeprefix("--")
        return Annotated[
            bool | None, typer.Option(f"{flag}/{negative}", help=how.help, show_default=False)
        ]
    return Annotated[kind | None, typer.Option(flag, metavar=how.metavar, help=how.help)]


_Command = Callable[..., None]

ENV_OPTION = "env"
"""The override that carries ``--env NAME=VALUE`` pairs (the function's variables)."""
EnvOpt = Annotated[
    list[str],
    typer.Option(
        "--env",
        metavar="NAME=VALUE",
        help="A variable for the function, repeatable; wins over the scenario's "
        "[consumer] environment. VALUE may name the run's resources: "
        f"{', '.join(f'{{{p}}}' for p in PLACEHOLDERS)}, {{table:LABEL}}, and sinks it sends "
        f"to: {sink_forms()}.",
    ),
]


POINT_FAULT_OPTION = "point_fault"
"""The option that carries ``--point-fault NAME:P`` texts (the ``point_faults`` override)."""
_PointFaultOpt = Annotated[
    list[str],
    typer.Option(
        "--point-fault",
        metavar="NAME:P",
        help="A point fault drawn with probability P (0..1) in every local execution "
        f"environment, repeatable: {', '.join(POINT_FAULTS)} (e.g. redeliver:0.05); wins "
        "over the scenario's [faults] point.",
    ),
]


def override_options(*, sweep: bool = False) -> Callable[[_Command], _Command]:
    """Give a command one option per scenario override, in place of its ``overrides`` parameter.

    The command receives ``overrides`` (field -> value, given options only, and
    ``env``: the ``--env`` pairs, when given); with ``sweep``, the fields that can be
    an axis arrive as text in ``axes``.
    """
    fields = [
        (
            f.name,
            option_name(f.name),
            _TYPES.get(str(f.type), str),
            how,
            sweep and how.sweep_help is not None,
        )
        for f, how in override_fields()
    ]

    def decorate(func: _Command) -> _Command:
        signature = inspect.signature(func, eval_str=True)
        options = [
            inspect.Parameter(
                option,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=None,
                annotation=_override_annotation(field, kind, how, axis=axis),
            )
            for field, option, kind, how, axis in fields
        ]
        options.append(
            inspect.Parameter(
                ENV_OPTION, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=[], annotation=EnvOpt
            )
        )
        options.append(
            inspect.Parameter(
                POINT_FAULT_OPTION,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=[],
                annotation=_PointFaultOpt,
            )
        )
        params: list[inspect.Parameter] = []
        for param in signature.parameters.values():
            if param.name == "overrides":
                params.extend(options)
            elif param.name != "axes":
                params.append(param)

        @functools.wraps(func)
        def command(**kwargs: Any) -> None:
            given = {field: kwargs.pop(option) for field, option, *_ in fields}
            axis_fields = {field for field, *_, axis in fields if axis}
            overrides = {k: v for k, v in given.items() if v is not None and k not in axis_fields}
            pairs = kwargs.pop(ENV_OPTION, None)
            if pairs:
                overrides[ENV_OPTION] = list(pairs)
            points = kwargs.pop(POINT_FAULT_OPTION, None)
            if points:
                overrides[POINTS_OVERRIDE] = list(points)
            if sweep:
                kwargs["axes"] = {k: v for k, v in given.items() if k in axis_fields}
            func(overrides=overrides, **kwargs)

        command.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
        return command

    return decorate


def grid(axes: dict[str, str | None]) -> list[dict[str, Any]]:
    """The cells of a sweep: the cartesian product of comma-separated values per field."""
    values: list[tuple[str, list[Any]]] = []
    for field, text in axes.items():
        if text is None:
            continue
        flag = "--" + option_name(field).replace("_", "-")
        items = [item.strip() for item in text.split(",") if item.strip()]
        try:
            parsed = [float(item) if "." in item else int(item) for item in items]
        except ValueError:
            raise InputError(f"{flag} {text!r}: give comma-separated numbers, e.g. 1,10") from None
        if not parsed:
            raise InputError(f"{flag} needs at least one value")
        values.append((field, parsed))
    if not values:
        flags = [
            "--" + option_name(f.name).replace("_", "-")
            for f, how in override_fields()
            if how.sweep_help is not None
        ]
        raise InputError(
            f"a sweep needs at least one axis: {', '.join(flags)}, each a comma-separated list"
        )
    return [
        dict(zip([f for f, _ in values], combo, strict=True))
        for combo in itertools.product(*[v for _, v in values])
    ]


PricesOpt = Annotated[
    Path | None,
    typer.Option(
        "--prices",
        metavar="FILE",
        help="Price table (TOML, the shape of loadtest/model/figures/prices/us-east-1.toml) for the cost "
        "per million messages and the --plan estimate (default: the committed us-east-1 "
        "on-demand list prices).",
    ),
]
