"""The side-by-side bench reads run_bench's figures and states this tree's ratio to a commit's."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import against

OUTPUT = """\
loadtest bench: 3000 messages (1000 ids x 3), variant conditional, 8 environments, embedded backend
  settled                           3000 (acked 3000, dead-lettered 0, duplicate writes 0)
  run duration                      8.96 s (whole process incl. setup 10.52 s)
  end to end                        334.8 messages/s  (0.55x baseline 612.8)
  CPU per message, all processes    6.27 ms  (1.82x baseline 3.45)
    harness                         1.42 ms  (1.84x baseline 0.77)
    execution environments          3.15 ms  (1.82x baseline 1.73)
    backend                         1.7 ms  (1.79x baseline 0.95)
  peak memory, all processes (PSS)  347.8 MB  (1.01x baseline 343.2)
      harness                       60 / 61 / 62 / 63 MB
  JSON report                       769 KB  (1.00x baseline 768.2)
"""


def test_the_figures_are_read_from_the_printed_lines() -> None:
    assert against.parse_figures(OUTPUT) == {
        "run duration": 8.96,
        "whole process": 10.52,
        "end to end": 334.8,
        "CPU per message, all processes": 6.27,
        "harness": 1.42,  # the CPU line, not the memory row of the same label
        "execution environments": 3.15,
        "backend": 1.7,
        "peak memory, all processes (PSS)": 347.8,
        "JSON report": 769.0,
    }


def test_the_table_shows_medians_and_this_trees_ratio() -> None:
    old = [{"harness": 2.0, "backend": 1.0}, {"harness": 4.0, "backend": 1.0}, {"harness": 3.0}]
    new = [{"harness": 1.5, "backend": 2.0}]
    rows = against.table("abc", old, new).splitlines()
    (harness,) = [r for r in rows if r.strip().startswith("harness")]
    (backend,) = [r for r in rows if r.strip().startswith("backend")]
    assert harness.split()[-1] == "0.50x"  # 1.5 against the median 3.0
    assert backend.split()[-1] == "2.00x"
    assert not [r for r in rows if "JSON report" in r]  # printed by neither


@pytest.mark.process  # runs git
def test_an_unknown_commit_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as stopped:
        against.extract("no-such-commit-anywhere", tmp_path)
    assert "'no-such-commit-anywhere' is not a commit" in str(stopped.value)


def test_the_bench_is_found_where_each_tree_keeps_it(tmp_path: Path) -> None:
    (tmp_path / "loadtest" / "cli").mkdir(parents=True)
    (tmp_path / "loadtest" / "cli" / "bench.py").write_text("")
    assert against.bench_module(tmp_path) == "loadtest.cli.bench"
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "run_bench.py").write_text("")
    assert against.bench_module(tmp_path) == "benchmarks.run_bench"
    assert against.bench_module(against.REPO) == "benchmarks.run_bench"
