"""Report files: where they go, refused before a run when unwritable, never overwritten."""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loadtest.errors import InputError
from loadtest.model.scenario.loading import Scenario
from loadtest.reports.model import SCHEMA_VERSION, ReportModel

if TYPE_CHECKING:
    from loadtest.api import Report


def write_text(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write report {str(path)!r}: {exc}") from exc


def check_writable(path: Path, *, directory: bool = False) -> None:
    """Refuse, before the run, an output path the report could not be written to."""
    folder = path if directory else path.parent
    if not directory and path.is_dir():
        raise InputError(f"cannot write report {str(path)!r}: it is a directory")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write report {str(path)!r}: {exc}") from exc
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"cannot write report {str(path)!r}: {str(folder)!r} is not writable")


def claim(folder: Path, stem: str, suffixes: tuple[str, ...]) -> Path:
    """A new path ``folder/stem-XXXXXX`` whose files with ``suffixes`` did not exist.

    Created exclusively (``O_EXCL``): concurrent runs finishing in the same
    second each get their own files, and no existing file is overwritten.
    """
    folder.mkdir(parents=True, exist_ok=True)
    while True:
        base = folder / f"{stem}-{secrets.token_hex(3)}"
        made: list[Path] = []
        try:
            for suffix in suffixes:
                path = base.with_name(base.name + suffix)
                path.open("x").close()
                made.append(path)
        except FileExistsError:
            for path in made:
                path.unlink(missing_ok=True)
            continue
        except OSError as exc:
            raise InputError(f"cannot write report in {str(folder)!r}: {exc}") from exc
        return base


def drop_unwritten(paths: Iterable[Path | None]) -> None:
    """Remove the report files ``claim`` made that were never written (still empty): a
    command that failed before its report leaves no empty file behind."""
    for path in paths:
        if path is not None and path.is_file() and path.stat().st_size == 0:
            path.unlink(missing_ok=True)


def write_json(path: Path, report: dict[str, Any]) -> None:
    write_text(path, json.dumps(report, indent=2) + "\n")


@dataclass(frozen=True)
class Outputs:
    """The optional report files besides the JSON."""

    html: Path | None = None
    markdown: Path | None = None
    junit: Path | None = None
    hgrm: Path | None = None
    """A directory for one ``.hgrm`` percentile distribution per run and latency."""

    def under(self, out_dir: Path | None) -> Outputs:
        """These outputs with relative paths placed in ``out_dir`` (once, never twice)."""
        if out_dir is None:
            return self

        def place(path: Path | None) -> Path | None:
            return path if path is None or path.is_absolute() else out_dir / path

        return Outputs(
            html=place(self.html),
            markdown=place(self.markdown),
            junit=place(self.junit),
            hgrm=place(self.hgrm),
        )

    def check(self) -> None:
        """Refuse unwritable paths before anything runs."""
        for path in (self.html, self.markdown, self.junit):
            if path is not None:
                check_writable(path)
        if self.hgrm is not None:
            check_writable(self.hgrm, directory=True)

    def write(self, report: ReportModel, out_dir: Path | None) -> list[Path]:
        from loadtest.reports.text.formats import hgrm_files, junit_xml, markdown_summary

        written = []
        renderers: list[tuple[Path | None, Callable[[ReportModel], str]]] = [
            (self.html, html_text),
            (self.markdown, markdown_summary),
            (self.junit, junit_xml),
        ]
        for path, renderer in renderers:
            if path is None:
                continue
            if out_dir is not None and not path.is_absolute():
                path = out_dir / path
            write_text(path, renderer(report))
            written.append(path)
        if self.hgrm is not None:
            directory = (
                self.hgrm if out_dir is None or self.hgrm.is_absolute() else out_dir / self.hgrm
            )
            for name, text in hgrm_files(report).items():
                write_text(directory / name, text)
            written.append(directory)
        return written


def html_text(report: ReportModel) -> str:
    from loadtest.reports.html.page import render_html

    return render_html(report)


DEFAULT_FOLDER = Path("reports")
"""Where a run's reports go when neither ``--json`` nor ``--out`` names a place (relative to
the working directory)."""


def plan_outputs(
    scenario: Scenario, json_path: Path | None, out_dir: Path | None, outputs: Outputs
) -> tuple[Path, Outputs]:
    """Every report path, resolved against ``--out`` once and checked before the run.

    With no ``--json``, the JSON and an HTML page get a fresh name of their own
    (never an existing file's); ``--out`` applies to each relative path once.
    """
    outputs = outputs.under(out_dir)
    if json_path is None:
        # No file named: keep the JSON and a page to open, like k6's web dashboard export.
        stamp = time.strftime("%Y%m%d-%H%M%S")
        folder = out_dir or DEFAULT_FOLDER
        check_writable(folder, directory=True)
        suffixes = (".json",) if outputs.html is not None else (".json", ".html")
        base = claim(folder, f"{scenario.name}-{stamp}", suffixes)
        json_path = base.with_name(base.name + ".json")
        if outputs.html is None:
            outputs = dataclasses.replace(outputs, html=base.with_name(base.name + ".html"))
    else:
        if out_dir is not None and not json_path.is_absolute():
            json_path = out_dir / json_path
        check_writable(json_path)
    outputs.check()
    return json_path, outputs


def write_reports(report: Report, json_path: Path, outputs: Outputs) -> list[Path]:
    write_json(json_path, report.to_dict())
    return [json_path, *outputs.write(report.model, None)]


def is_history(path: Path) -> bool:
    """Whether the file starts as a history file does (``loadtest.model.history.journal``)."""
    from loadtest.model.history.journal import MAGIC

    try:
        with path.open("rb") as file:
            return file.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def read_report(path: Path) -> ReportModel:
    """A saved JSON report read into the report model; refused (``InputError``) unless it
    is a complete report of this schema version, naming what is missing."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read report {str(path)!r}: {exc}") from exc
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        raise InputError(
            f"{str(path)!r} is not a loadtest report with schema_version {SCHEMA_VERSION}"
        )
    from loadtest.reports.reportcheck import missing_keys

    missing = missing_keys(data)
    if missing:
        shown = ", ".join(missing[:8]) + (
            f" and {len(missing) - 8} more" if len(missing) > 8 else ""
        )
        raise InputError(f"{str(path)!r} is not a complete loadtest report: missing {shown}")
    return ReportModel.from_json(data)
