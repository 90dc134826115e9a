"""Golden reports: saved run histories render to exactly the bytes they rendered to before.

``tests/reports/golden`` holds a few small saved report inputs (the engine's results of
built-in scenarios, captured by ``tools/report_golden.py capture``) and the SHA-256 of
every rendering of them (JSON, HTML, Markdown, JUnit, .hgrm, the terminal summary, the
failed-assertion text, the diff table; each also as an interrupted run). A change that
moves one byte of any of them fails here. When the change is intended, refresh the
digests and say why in the commit::

    PYTHONPATH=$PWD python tools/report_golden.py digest tests/reports/golden
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tools.report_golden import MANIFEST, render_all

GOLDEN = Path(__file__).parent / "golden"


def test_the_saved_histories_render_to_the_same_bytes(tmp_path: Path) -> None:
    expected: dict[str, str] = json.loads((GOLDEN / MANIFEST).read_text(encoding="utf-8"))
    render_all(GOLDEN, tmp_path)
    rendered = {
        path.relative_to(tmp_path).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(tmp_path.rglob("*"))
        if path.is_file()
    }
    changed = sorted(
        name for name in expected.keys() & rendered.keys() if expected[name] != rendered[name]
    )
    assert (
        changed,
        sorted(expected.keys() - rendered.keys()),
        sorted(rendered.keys() - expected.keys()),
    ) == (
        [],
        [],
        [],
    ), f"renderings differ from the golden digests; the new ones are in {tmp_path}"


def test_every_saved_case_is_in_the_digests() -> None:
    expected = json.loads((GOLDEN / MANIFEST).read_text(encoding="utf-8"))
    cases = {path.stem for path in GOLDEN.glob("*.pickle")}
    assert cases == {"poison-batch-partial", "race-burst-repeat-small", "seed-lab"}
    assert {name.split("/")[0] for name in expected} == cases | {f"{c}-incomplete" for c in cases}
