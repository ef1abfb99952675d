"""`zoo reproduce --dry-run`'s time line: from the wall times of each run's row, else of other methods on its
dataset (same data and schedule as a rule), saying which estimates it used and what it left out."""

from zoo.leaderboard.record import RunRecord
from zoo.registry import BenchmarkRow, TaskSpec
from zoo.runner.grid_time import time_to_do

ROWS = (
    BenchmarkRow("dense", "mix 1:1", "dense.yaml"),
    BenchmarkRow("moe", "mix 1:1", "moe.yaml"),
    BenchmarkRow("moe", "mix 4:1", "moe_4to1.yaml"),
)
SPEC = TaskSpec(name="t", description="", model="m:M", datamodules={}, config_dir="/nonexistent", benchmark=ROWS)


def _record(method: str, dataset: str, wall_time_s: float) -> RunRecord:
    # no config and no settings hash: nothing to compare, so the record counts as ran with its row's settings
    return RunRecord(
        task="t", method=method, dataset=dataset, metrics={}, seed=0, config={}, versions={},
        wall_time_s=wall_time_s, commit="", machine={},
    )  # fmt: skip


def test_time_comes_from_the_rows_own_records_first():
    records = [_record("dense", "mix 1:1", 100.0), _record("moe", "mix 1:1", 30.0), _record("moe", "mix 1:1", 50.0)]
    line = time_to_do(SPEC, [(ROWS[1], 1, None)], records)
    assert line == "about 40 s of one process at the wall times recorded for their rows' settings"


def test_a_row_without_records_is_estimated_from_its_datasets_other_methods_and_says_so():
    records = [_record("dense", "mix 1:1", 10.0), _record("dense", "mix 1:1", 14.0)]
    line = time_to_do(SPEC, [(ROWS[1], 0, None), (ROWS[2], 0, None)], records)
    assert line.startswith("about 12 s of one process")
    assert "1 of the 2 runs estimated from other methods' runs on their dataset" in line
    assert "not counted: 1 of the 2 runs, whose rows and datasets have no such record" in line


def test_with_no_record_of_the_row_or_its_dataset_the_time_is_unknown():
    line = time_to_do(SPEC, [(ROWS[2], 0, None)], [_record("dense", "mix 1:1", 100.0)])
    assert line.startswith("how long: unknown")
