"""Checks of a TU-layout dataset (``<NAME>_A.txt``, ``_graph_indicator``, ``_graph_labels``, ...) before PyG reads it.

PyG's ``TUDataset`` trusts its files: an empty file, a truncated graph indicator or an edge to a node that does not
exist ends in an ``IndexError`` deep inside PyG, and a file without a final newline silently loses its last line
(PyG's ``read_txt_array`` splits on ``"\\n"`` and drops the last piece). :func:`check_tu_files` reads every file the
way PyG does and refuses, in one line naming the file (and the line), anything PyG would crash on or misread.

Layout (Morris et al. 2020, chrsmrrs.com/graphkerneldatasets): node ids 1..N over the whole dataset (N = the
lines of ``_graph_indicator``), graph ids 1..G (G = the lines of ``_graph_labels``), one comma-separated row per
edge / node / graph in each file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from zoo.data.finite import require_finite
from zoo.errors import ConfigError


@dataclass(frozen=True)
class Part:
    """One kind of TU file: its number type and what one of its lines stands for (``None`` width: any)."""

    number: type
    unit: str
    width: int | None = None


PARTS = {
    "A": Part(int, "edge", 2),
    "graph_indicator": Part(int, "node", 1),
    "graph_labels": Part(int, "graph", 1),
    "node_labels": Part(int, "node"),
    "node_attributes": Part(float, "node"),
    "edge_labels": Part(int, "edge"),
    "edge_attributes": Part(float, "edge"),
    "graph_attributes": Part(float, "graph"),
}


def check_tu_files(name: str, files: Mapping[str, Path]) -> None:
    """Raise ``ConfigError`` (one line, naming the file) unless the TU files of dataset ``name`` are consistent.

    Args:
        name: the dataset name, the prefix of the files (``<name>_A.txt``).
        files: file name -> path, as found in the folder (other files are ignored).

    Checked: every file is non-empty, ends with a newline, has no blank line, the same number of comma-separated
    values on every line (2 in ``_A``, 1 in ``_graph_indicator`` / ``_graph_labels``), integers where PyG reads
    integers and finite numbers in the attribute files; one line per node in ``_node_labels`` /
    ``_node_attributes``, per edge in ``_edge_*``, per graph in ``_graph_attributes``; graph ids in 1..G,
    non-decreasing, each graph with a node; edge endpoints in 1..N and in one graph.
    """
    tables = {}
    for part in PARTS:
        path = files.get(f"{name}_{part}.txt")
        if path is not None:
            tables[part] = (path, read_table(path, PARTS[part]))
    nodes, graphs = tables["graph_indicator"][1][:, 0], len(tables["graph_labels"][1])
    _check_row_counts(tables, len(nodes), graphs)
    _check_graph_ids(tables["graph_indicator"][0], nodes, tables["graph_labels"][0], graphs)
    _check_edges(*tables["A"], tables["graph_indicator"][0], nodes)


def read_table(path: Path, part: Part) -> np.ndarray:
    """The numbers of one TU file as a (lines, values per line) array; ``ConfigError`` naming the file and line for
    an empty file, a missing final newline, a blank line, a ragged or wrong width, or a value that does not parse."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    if not text.strip():
        raise ConfigError(f"{path}: the file is empty; it must hold one line per {part.unit}")
    if not text.endswith("\n"):
        count = text.count("\n") + 1
        raise ConfigError(
            f"{path}: the last line ({count}) has no line ending, and PyG's TU reader would drop it; "
            "end the file with a newline"
        )
    lines = text.split("\n")[:-1]
    blank = [i for i, line in enumerate(map(str.strip, lines), start=1) if not line]
    if blank:
        raise ConfigError(f"{path}: line {blank[0]} is blank; remove blank lines (one line per {part.unit})")
    widths = np.fromiter(map(str.count, lines, [","] * len(lines)), dtype=np.int64, count=len(lines)) + 1
    expected = part.width or int(widths[0])
    wrong = np.flatnonzero(widths != expected)
    if len(wrong):
        line = int(wrong[0]) + 1
        raise ConfigError(
            f"{path}: line {line} has {widths[wrong[0]]} comma-separated value(s), expected {expected} "
            f"(one {part.unit} per line{', as on line 1' if part.width is None else ''})"
        )
    values = _parse(path, lines, part.number)
    array = np.array(values, dtype=np.int64 if part.number is int else np.float64).reshape(len(lines), expected)
    fix = f"every {part.unit} needs finite numbers (PyG reads float32: beyond ±3.4e38 is inf); fix the file"
    require_finite(as_float32(array) if part.number is float else array, path, rows="line", fix=fix)
    return array


def as_float32(array: np.ndarray) -> np.ndarray:
    """``array`` as the float32 the model will see: values beyond float32's range become inf (checked as such)."""
    with np.errstate(over="ignore"):
        return array.astype(np.float32)


def _parse(path: Path, lines: list[str], number: type) -> list:
    """Every value of ``lines`` converted as PyG converts it (``int`` / ``float``); on failure the file, line and
    value are named."""
    try:
        values = list(map(number, ",".join(lines).split(",")))
        if number is int and values and max(map(abs, values)) >= 2**63:
            raise OverflowError
        return values
    except (ValueError, OverflowError):
        pass
    kind = "an integer" if number is int else "a number"
    for i, line in enumerate(lines, start=1):
        for value in line.split(","):
            try:
                if number is int and abs(int(value)) >= 2**63:
                    raise ValueError
                number(value)
            except ValueError:
                raise ConfigError(f"{path}: line {i}: {value.strip()!r} is not {kind} (64-bit)") from None
    raise AssertionError("unreachable: a value failed to parse but no line was found")


def _check_row_counts(tables: dict, nodes: int, graphs: int) -> None:
    counts = {"node": nodes, "edge": len(tables["A"][1]), "graph": graphs}
    sources = {"node": "graph_indicator", "edge": "A", "graph": "graph_labels"}
    for part, (path, array) in tables.items():
        unit = PARTS[part].unit
        if len(array) != counts[unit]:
            source = tables[sources[unit]][0].name
            raise ConfigError(
                f"{path}: {len(array)} lines, but {source} has {counts[unit]} (one line per {unit}); "
                "one of the two files is truncated or has extra lines"
            )


def _check_graph_ids(path: Path, graph_of: np.ndarray, labels: Path, graphs: int) -> None:
    outside = np.flatnonzero((graph_of < 1) | (graph_of > graphs))
    if len(outside):
        i = int(outside[0])
        raise ConfigError(
            f"{path}: line {i + 1}: graph id {graph_of[i]} is outside 1..{graphs} ({labels.name} has {graphs} "
            "lines, one per graph)"
        )
    back = np.flatnonzero(np.diff(graph_of) < 0)
    if len(back):
        i = int(back[0]) + 1
        raise ConfigError(
            f"{path}: line {i + 1}: graph id {graph_of[i]} after {graph_of[i - 1]}; list the nodes graph by graph "
            "(graph ids non-decreasing), renumbering the node ids in _A to match"
        )
    empty = np.flatnonzero(np.bincount(graph_of, minlength=graphs + 1)[1:] == 0)
    if len(empty):
        raise ConfigError(
            f"{path}: no node belongs to graph {int(empty[0]) + 1} ({len(empty)} of the {graphs} graphs in "
            f"{labels.name} have none); is the file truncated?"
        )


def _check_edges(path: Path, edges: np.ndarray, indicator: Path, graph_of: np.ndarray) -> None:
    nodes = len(graph_of)
    outside = np.flatnonzero(((edges < 1) | (edges > nodes)).any(axis=1))
    if len(outside):
        i = int(outside[0])
        raise ConfigError(
            f"{path}: line {i + 1}: edge ({edges[i, 0]}, {edges[i, 1]}) has a node id outside 1..{nodes} "
            f"({indicator.name} has {nodes} lines, one per node; ids are 1-based); {len(outside)} such edge(s)"
        )
    graph_a, graph_b = graph_of[edges[:, 0] - 1], graph_of[edges[:, 1] - 1]
    across = np.flatnonzero(graph_a != graph_b)
    if len(across):
        i = int(across[0])
        raise ConfigError(
            f"{path}: line {i + 1}: edge ({edges[i, 0]}, {edges[i, 1]}) joins graph {graph_a[i]} and graph "
            f"{graph_b[i]} ({indicator.name}); an edge must stay within one graph"
        )
