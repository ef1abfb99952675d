"""One finite-value check for every reader of user data: a NaN or an infinity in an input file is refused in one
line naming the file, the column and the row, before it can turn into a NaN loss an epoch later."""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike

import numpy as np

from zoo.errors import ConfigError


def require_finite(
    values: np.ndarray | Sequence,
    path: str | PathLike,
    columns: Sequence[str] | None = None,
    *,
    rows: str = "data row",
    first_row: int = 1,
    fix: str = "clean the file (replace or drop those values) and run again",
) -> None:
    """Raise ``ConfigError`` when ``values`` (1-D or 2-D, rows first) holds a NaN, ``inf`` or ``-inf``.

    Args:
        values: the numbers as read from ``path``; a 1-D array is one column.
        path: the file they came from, named in the message.
        columns: the column names, in order (``None``: columns are counted from 1).
        rows: what a row is called in the file ("data row", "line", "bag", "frame", ...).
        first_row: the number the first row of ``values`` has in that file (1: the first data row).
        fix: what the user should do, the end of the message.

    Raises:
        ConfigError: one line: the file, how many values are not finite, the first one's kind, column and row.
    """
    array = np.asarray(values)
    if array.dtype.kind not in "fc":  # integers and booleans are always finite
        return
    bad = ~np.isfinite(array)
    if not bad.any():
        return
    grid = bad.reshape(len(array), -1) if array.ndim else bad.reshape(1, 1)
    row, col = np.argwhere(grid)[0]
    value = array.reshape(grid.shape)[row, col]
    kind = "NaN" if np.isnan(value) else ("inf" if value > 0 else "-inf")
    if columns is not None and col < len(columns):
        where = f"column {columns[col]!r}"
    else:
        where = f"column {col + 1}"
    count = int(grid.sum())
    raise ConfigError(
        f"{path}: {count} value(s) are not finite (first: {kind} in {where}, {rows} {row + first_row}); {fix}"
    )
