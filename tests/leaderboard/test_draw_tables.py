"""The one renderer of declared tables (``zoo.leaderboard.draw``): a Table pivots the records, figures in a row share
a paragraph, sections are task functions named by dotted path."""

from __future__ import annotations

import dataclasses
import sys
import types

from zoo_testing import make_record

from zoo.leaderboard.draw import draw_tables
from zoo.leaderboard.tables import Column, Image, Plot, Section, Table, field
from zoo.registry import BenchmarkRow, TaskSpec

ROWS = (BenchmarkRow("moe", "b", "c.yaml"), BenchmarkRow("moe", "a", "c.yaml"), BenchmarkRow("dense", "a", "c.yaml"))
SPEC = TaskSpec("toy", "a toy task", "m:M", {}, "/nowhere", benchmark=ROWS)


def _spec(*declared) -> TaskSpec:
    module = types.ModuleType("toy_tables")
    module.TABLES = declared
    module.lines = lambda page: [f"{len(page.records)} records", ""]
    module.drawn = lambda page, path: path.parent.mkdir(parents=True, exist_ok=True) or path.write_bytes(b"x") or True
    module.nothing = lambda page, path: False
    sys.modules["toy_tables"] = module
    return dataclasses.replace(SPEC, extra_tables="toy_tables:TABLES")


def _records():
    return [
        make_record("toy", "moe", "a", {"test/x": 1.0}, seed=0, extra={"d": {"k": 0.5}}),
        make_record("toy", "moe", "a", {"test/x": 2.0}, seed=1),
        make_record("toy", "moe", "b", {"test/x": 4.0}, seed=0),
        make_record("toy", "dense", "a", {}, seed=0, extra={"student": "s"}),
    ]


def test_a_table_averages_each_group_and_counts_the_runs_that_report():
    columns = (Column("runs"), Column("x", "metrics.test/x"), Column("k", "extra.d.k", 2))
    text = draw_tables(_spec(Table("T", columns, note="Note.")), _records())
    assert text.splitlines() == [
        "## T",
        "",
        "Note.",
        "",
        "| dataset | method | runs | x | k |",
        "|---|---|---|---|---|",
        "| a | moe | 2 | 1.500 | 0.50 |",
        "| b | moe | 1 | 4.000 | — |",
    ]  # dense on a reports neither column: no row


def test_benchmark_order_method_filter_dataset_columns_and_an_empty_table():
    columns = tuple(Column(ds, "metrics.test/x", datasets=(ds,)) for ds in ("b", "a"))
    table = Table("T", columns, rows=("method",), order="benchmark")
    assert draw_tables(_spec(table), _records()).splitlines()[-1] == "| moe | 4.000 | 1.500 |"
    students = Table("S", (Column("x", "metrics.test/x"),), rows=("extra.student",), methods=("dense",))
    assert draw_tables(_spec(students), _records()) == ""
    assert field(_records()[3], "extra.student") == "s" and field(_records()[3], "extra.d.k") is None


def test_sections_and_figures_one_blank_line_apart_figures_in_a_row_together(tmp_path):
    (tmp_path / "results" / "toy").mkdir(parents=True)
    (tmp_path / "results" / "toy" / "c.png").write_bytes(b"x")
    declared = (
        Section("toy_tables:lines"),
        Plot("one", "1.png", "toy_tables:drawn"),
        Plot("none", "0.png", "toy_tables:nothing"),
        Plot("two", "2.png", "toy_tables:drawn"),
        Image("curves", "c.png", heading="Curves"),
        Image("absent", "absent.png"),
    )
    assert draw_tables(_spec(*declared), _records(), leaderboard=tmp_path).splitlines() == [
        "4 records",
        "",
        "![one](results/toy/figures/1.png)",
        "![two](results/toy/figures/2.png)",
        "",
        "## Curves",
        "",
        "![curves](results/toy/c.png)",
    ]
    assert (tmp_path / "results" / "toy" / "figures" / "2.png").exists()
    assert "![one]" not in draw_tables(_spec(*declared), _records(), leaderboard=tmp_path / "none")
