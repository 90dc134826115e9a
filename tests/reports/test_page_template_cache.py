"""The page's compiled template is kept in the user's cache for the next process, and a
cache that cannot be written changes nothing but the compiling."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2
import pytest

from loadtest.reports.html import page

SAMPLE = Path(__file__).with_name("sample_report.json")


def _sample() -> dict[str, Any]:
    sample: dict[str, Any] = json.loads(SAMPLE.read_text())
    return sample


def _fresh_process(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Forget the environment made in this process, as a new process starts; return the
    names of the templates compiled from now on."""
    page._environment.cache_clear()
    compiled: list[str] = []
    compile_ = jinja2.Environment.compile

    def counted(self: jinja2.Environment, source: Any, name: str | None = None, *a: Any) -> Any:
        if name is not None:
            compiled.append(name)
        return compile_(self, source, name, *a)

    monkeypatch.setattr(jinja2.Environment, "compile", counted)
    return compiled


def test_the_template_compiled_once_is_read_back_by_the_next_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    compiled = _fresh_process(monkeypatch)
    first = page.render_html(_sample())
    assert compiled == ["report.html.j2"]
    assert list((tmp_path / "cache" / "loadtest" / page.TEMPLATE_CACHE).iterdir())

    compiled = _fresh_process(monkeypatch)
    assert page.render_html(_sample()) == first
    assert compiled == []  # read back, not compiled
    page._environment.cache_clear()


def test_a_cache_that_cannot_be_written_only_costs_the_compiling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _fresh_process(monkeypatch)
    expected = page.render_html(_sample())

    (tmp_path / "readonly").write_text("")  # a file: nothing can be made below it
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "readonly"))
    compiled = _fresh_process(monkeypatch)
    assert page.render_html(_sample()) == expected
    assert compiled == ["report.html.j2"]
    page._environment.cache_clear()
