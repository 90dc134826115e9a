"""The tree describes the product, not how it was built: a check run by ``nox -s lint``.

Fails, naming file, line and the text, on:

- development-diary references in code, comments, docs, scenarios and test names:
  a numbered stop or issue ("stop 19", "issue 12", "Issue 12's"), constants named
  after an issue (``ISSUE_3_...``), and narrative about the sessions that built it
  ("a later session", "session 4");
- citations of a design document the repository does not contain (``DESIGN.md``);
- module docstrings that cite a ``loadtest.`` module, or a name in one, that does not
  exist (``loadtest.model.figures.cost`` must be a module, ``loadtest.aws.clients.translate``
  a top-level name of ``loadtest/aws/clients.py``).

How and when something was built belongs in commit messages. Run
``python tools/check_tree.py [ROOT]``: exit 0 when clean, 1 with the findings.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterable, Iterator
from pathlib import Path

TEXT_SUFFIXES = {".py", ".md", ".toml", ".j2", ".yml", ".yaml", ".txt", ".cfg", ".ini", ".sh"}
TEXT_NAMES = {"run"}  # .ci/run
SELF = {"tools/check_tree.py", "tests/tools/test_check_tree.py"}
"""This check and its test spell the patterns out."""

# Built from parts so that this file does not match itself when read as text.
_DESIGN = "DESIGN" + r"\.md"
PATTERNS: dict[str, re.Pattern[str]] = {
    "a numbered stop": re.compile(
        r"\bstops? \d+(?![\d.,]*\s*(?:s|ms|us|seconds?|minutes?|messages?|%)\b)", re.I
    ),
    "a numbered issue": re.compile(r"\bissues? #?\d+|\bissue #\d+|\bissue'?s? \d+", re.I),
    "a constant named after an issue": re.compile(r"\bISSUE_\w*"),
    "the sessions that built it": re.compile(
        r"\b(?:this|previous|earlier|later|next|last|another|an earlier|a later) session\b"
        r"|\bsession \d+\b",
        re.I,
    ),
    "a design document the repository does not contain": re.compile(_DESIGN),
}
_MODULE_REF = re.compile(r"\bloadtest(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def tracked_files(root: Path) -> list[Path]:
    """The repository's files (``git ls-files``), or every file under ``root`` without git."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True
        ).stdout.decode()
        names = [name for name in listed.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        names = [
            str(p.relative_to(root))
            for p in root.rglob("*")
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
        ]
    return [root / name for name in sorted(names)]


def _is_text(path: Path) -> bool:
    return path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES


def diary_findings(root: Path, files: Iterable[Path]) -> Iterator[str]:
    for path in files:
        relative = path.relative_to(root).as_posix()
        if relative in SELF or not _is_text(path) or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            for what, pattern in PATTERNS.items():
                found = pattern.search(line)
                if found:
                    yield f"{relative}:{number}: {what}: {found.group(0)!r}"


def _top_level_names(module: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            and isinstance(node.value, ast.List | ast.Tuple)
        ):
            # A package may export lazily (a module __getattr__): its __all__ is the list.
            names.update(
                e.value
                for e in node.value.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            )
    return names


def _package_dirs(root: Path) -> dict[str, str]:
    """Packages that live in another folder (``[tool.setuptools.package-dir]``)."""
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return {}
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    dirs = data.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    return {str(k): str(v) for k, v in dirs.items() if k}


def _resolves(root: Path, reference: str) -> bool:
    """Whether ``loadtest.a.b.c`` names a module, or a top-level name of a module, in ``root``."""
    for package, folder in _package_dirs(root).items():
        if reference == package or reference.startswith(package + "."):
            return (root / folder).is_dir()
    parts = reference.split(".")
    for cut in range(len(parts), 0, -1):
        base = root.joinpath(*parts[:cut])
        module = base.with_suffix(".py")
        if not module.is_file():
            module = base / "__init__.py"
        if module.is_file():
            rest = parts[cut:]
            return not rest or rest[0] in _top_level_names(module)
        if base.is_dir() and cut == len(parts):
            return True  # a folder such as a package of data
    return False


def docstring_findings(root: Path, files: Iterable[Path]) -> Iterator[str]:
    for path in files:
        relative = path.relative_to(root).as_posix()
        if path.suffix != ".py" or relative in SELF or not path.is_file():
            continue
        try:
            docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for reference in sorted(set(_MODULE_REF.findall(docstring or ""))):
            if not _resolves(root, reference):
                yield f"{relative}: module docstring cites {reference}, which does not exist"


def findings(root: Path) -> list[str]:
    files = tracked_files(root)
    return [*diary_findings(root, files), *docstring_findings(root, files)]


def main(argv: list[str]) -> int:
    root = Path(argv[1] if len(argv) > 1 else ".").resolve()
    found = findings(root)
    for finding in found:
        print(finding)
    if found:
        print(
            f"{len(found)} finding(s): the tree describes the product; how and when it was "
            "built belongs in commit messages.",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
