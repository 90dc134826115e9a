"""tools/check_tree.py: the tree's no-diary check finds what it must and passes the tree."""

from __future__ import annotations

from pathlib import Path

from tools import check_tree

ROOT = Path(__file__).resolve().parents[2]


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_each_kind_of_diary_reference_is_found_with_its_file_and_line(tmp_path: Path) -> None:
    design = "DESIGN" + ".md"
    root = _tree(
        tmp_path,
        {
            "pkg/a.py": '"""Fine."""\n# measured at stop 19\nX = 1\n',
            "pkg/b.py": f'"""Counts ({design})."""\n',
            "tests/test_c.py": "ISSUE" + "_3_SCENARIOS = []\n# see issue 12\n",
            "README.md": "Fixed in a later session.\n",
        },
    )
    found = check_tree.findings(root)
    assert found == [
        "README.md:1: the sessions that built it: 'a later session'",
        "pkg/a.py:2: a numbered stop: 'stop 19'",
        f"pkg/b.py:1: a design document the repository does not contain: '{design}'",
        "tests/test_c.py:1: a constant named after an issue: 'ISSUE_3_SCENARIOS'",
        "tests/test_c.py:2: a numbered issue: 'issue 12'",
    ]


def test_product_words_that_look_alike_are_not_findings(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "pkg/a.py": (
                '"""Stop 2 s after the deadline; stop 10 messages early; one boto3 session."""\n'
                "# a Stop request, the issue of a receipt handle\n"
            )
        },
    )
    assert check_tree.findings(root) == []


def test_module_docstrings_must_cite_modules_and_names_that_exist(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "loadtest/__init__.py": '"""The package."""\n__all__ = ["run"]\n',
            "loadtest/model/__init__.py": '"""Pure."""\n',
            "loadtest/model/figures/cost.py": '"""Prices."""\ndef price() -> None: ...\n',
            "loadtest/a.py": (
                '"""Uses ``loadtest.model.figures.cost.price``, ``loadtest.run`` and '
                '``loadtest.model.gone``."""\n'
            ),
            "loadtest/b.py": '"""Uses ``loadtest.model.figures.cost.missing``."""\n',
        },
    )
    assert check_tree.findings(root) == [
        "loadtest/a.py: module docstring cites loadtest.model.gone, which does not exist",
        "loadtest/b.py: module docstring cites loadtest.model.figures.cost.missing, which does not exist",
    ]


def test_the_repository_itself_is_clean() -> None:
    assert check_tree.findings(ROOT) == []
