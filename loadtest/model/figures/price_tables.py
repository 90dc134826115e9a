"""Price tables: the committed on-demand list prices (``loadtest/model/figures/prices/*.toml``), and
reading one's own.

The only file reading for costs (``loadtest.model.figures.cost`` is pure). A table is TOML
with ``region``, ``as_of``, ``currency`` and the sections of
``us-east-1.toml``, which is the default.
"""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from pathlib import Path

from loadtest.errors import PricesError
from loadtest.model.figures.cost import Prices, parse_prices

TABLES_PACKAGE = "loadtest.model.figures.prices"
"""The package whose data files are the committed tables."""
DEFAULT_TABLE = "us-east-1.toml"


@cache
def default_prices() -> Prices:
    """The committed table (us-east-1)."""
    text = resources.files(TABLES_PACKAGE).joinpath(DEFAULT_TABLE).read_text(encoding="utf-8")
    return parse_prices(tomllib.loads(text), source=f"built-in {DEFAULT_TABLE}")


def load_prices(path: Path | None) -> Prices:
    """The table at ``path``, or the committed one; PricesError (exit 2) if unusable."""
    if path is None:
        return default_prices()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PricesError(f"cannot read price table {path}: {exc}") from exc
    return parse_prices(data, source=str(path))
