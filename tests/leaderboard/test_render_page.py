"""A page is drawn from records and the spec's declarations only: marks, targets, routing and the notes file."""

from __future__ import annotations

from zoo.code_closure import source_hash
from zoo.leaderboard.record import RunRecord
from zoo.leaderboard.render import render_task
from zoo.leaderboard.targets import AtLeast
from zoo.registry import BenchmarkRow, TaskSpec


def _rec(method, value, seed, source_hash, routing=None, reduced=False) -> RunRecord:
    return RunRecord(
        task="toy", method=method, dataset="A", metrics={"test/acc": value}, seed=seed, config={}, versions={},
        wall_time_s=2.0, commit="c", machine={}, source_hash=source_hash, routing=routing or {}, reduced=reduced,
    )  # fmt: skip


SUMMARY = {"test": {"moe": {"entropy": 0.5, "load_entropy": 0.9, "max_over_mean_load": 1.5, "dead_experts": 1}}}


def _spec() -> TaskSpec:
    rows = (
        BenchmarkRow("moe", "A", "x.yaml", published={"test/acc": 0.9}, published_source="Paper, Table 1"),
        BenchmarkRow("dense", "A", "x.yaml", reduced=True, note="1 epoch"),
    )
    return TaskSpec(
        name="toy", description="A toy.", model="m:M", datamodules={}, config_dir="", benchmark=rows,
        metrics=("test/acc",), higher_is_better=("test/acc",), targets=(AtLeast("moe", "A", "test/acc", 0.85),),
    )  # fmt: skip


def test_page_marks_mixed_code_judges_targets_and_includes_notes(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "toy.md").write_text("Run history: the first runs used a smaller model.\n")
    records = [
        _rec("moe", 0.80, 0, "v1", SUMMARY),
        _rec("moe", 0.90, 1, "v2", SUMMARY),
        _rec("dense", 0.70, 0, "v1", reduced=True),
    ]
    page = render_task(_spec(), records, leaderboard_dir=tmp_path)
    assert "| A | 0.850 ± 0.071 (n=2) ◇ ° | 0.700 (n=1) † ° | 0.900 |" in page
    assert (
        "| moe test/acc ≥ 0.85 | A | 0.850 (n=2) | 2 | +0.0000 [-0.6353, +0.6353] | n too small | not yet judged |"
        in page
    )
    assert "| A | moe | moe | test | 2 | 0.50 | 0.90 | 1.50 | 1.00 |" in page
    assert "Run history: the first runs used a smaller model." in page
    assert "- dense on A: 1 epoch" in page and "Published numbers: Paper, Table 1" in page


def test_one_code_version_and_no_routing_add_no_marks_or_sections(tmp_path):
    records = [_rec("moe", 0.80, 0, "v1"), _rec("moe", 0.90, 1, "v1")]
    page = render_task(_spec(), records, leaderboard_dir=tmp_path)
    assert "◇" not in page and "## Routing" not in page


def test_cells_written_by_other_code_are_marked_and_counted(tmp_path):
    current = source_hash({})  # the fingerprint a run of this (empty) config would get from the code installed now
    records = [_rec("moe", 0.80, 0, current), _rec("moe", 0.90, 1, current), _rec("dense", 0.70, 0, "older")]
    page = render_task(_spec(), records, leaderboard_dir=tmp_path)
    assert "| A | 0.850 ± 0.071 (n=2) | 0.700 (n=1) ° | 0.900 |" in page
    assert "1 of 3 records carry a source fingerprint that differs from the current code's" in page
    assert "0 carry none" in page

    unfingerprinted = [_rec("moe", 0.80, 0, current), _rec("dense", 0.70, 0, "")]
    page = render_task(_spec(), unfingerprinted, leaderboard_dir=tmp_path)
    assert "| A | 0.800 (n=1) | 0.700 (n=1) ◇ ° |" in page and "1 carry none" in page

    page = render_task(_spec(), records[:2], leaderboard_dir=tmp_path)
    assert "°" not in page


def test_a_dataset_whose_runs_report_other_metrics_gets_no_empty_row(tmp_path):
    rows = (
        BenchmarkRow("moe", "A", "x.yaml"),
        BenchmarkRow("moe", "B", "x.yaml"),
        BenchmarkRow("moe", "C", "x.yaml"),
    )
    spec = TaskSpec(
        name="toy", description="A toy.", model="m:M", datamodules={}, config_dir="", benchmark=rows,
        metrics=("test/acc", "test/mae"), higher_is_better=("test/acc",),
    )  # fmt: skip
    on_b = RunRecord(**{**vars(_rec("moe", 0.5, 0, "v1")), "dataset": "B", "metrics": {"test/mae": 0.25}})
    page = render_task(spec, [_rec("moe", 0.8, 0, "v1"), on_b], leaderboard_dir=tmp_path)
    acc, mae = page.split("## test/mae")
    assert "| A | 0.800 (n=1)" in acc and "| B |" not in acc  # B's run reports no accuracy
    assert "| C | not run |" in acc and "| C | not run |" in mae  # C has not run: it may report either
    assert "| B | 0.250 (n=1)" in mae and "| A |" not in mae.split("##")[0]


def test_a_method_without_a_row_on_a_dataset_is_marked_apart_from_a_row_not_run_yet(tmp_path):
    rows = (
        BenchmarkRow("moe", "A", "x.yaml"),
        BenchmarkRow("moe", "B", "x.yaml"),
        BenchmarkRow("ablation", "A", "x.yaml"),
    )  # the ablation has no row on B
    spec = TaskSpec(
        name="toy", description="A toy.", model="m:M", datamodules={}, config_dir="", benchmark=rows,
        metrics=("test/acc",), higher_is_better=("test/acc",),
    )  # fmt: skip
    ablation = RunRecord(**{**vars(_rec("moe", 0.7, 0, "v1")), "method": "ablation"})
    page = render_task(spec, [_rec("moe", 0.8, 0, "v1"), ablation], leaderboard_dir=tmp_path)
    assert "| B | not run | × |" in page  # moe/B is declared and pending; ablation/B does not exist
    assert "× not in the benchmark" in page
    full = TaskSpec(**{**vars(spec), "benchmark": (*rows, BenchmarkRow("ablation", "B", "x.yaml"))})
    page = render_task(full, [_rec("moe", 0.8, 0, "v1"), ablation], leaderboard_dir=tmp_path)
    assert "| B | not run | not run |" in page and "×" not in page


def test_page_counts_records_per_cpu_kind(tmp_path):
    amd = {"cpu": "AMD EPYC", "cores": 2, "cpu_isa": "AVX2", "cpu_id": "family 25 model 1 stepping 1"}
    records = [_rec("moe", 0.80, 0, "v1"), _rec("moe", 0.90, 1, "v1"), _rec("dense", 0.70, 0, "v1")]
    records[0].machine.update(amd)
    records[1].machine.update(amd)
    records[2].machine.update(cpu="Intel(R) Xeon(R) Processor", cores=2)  # a record older than cpu_isa / cpu_id
    page = render_task(_spec(), records, leaderboard_dir=tmp_path)
    assert (
        "machines: AMD EPYC, 2 cores, AVX2, family 25 model 1 stepping 1: 2; Intel(R) Xeon(R) Processor, 2 cores: 1;"
        in page
    )


def test_page_counts_the_moe_method_against_its_dense_twin(tmp_path):
    """The summary section: each declared (method, dense twin) pair on every dataset both ran, by the pages' rule."""
    spec = TaskSpec(**{**vars(_spec()), "dense_twins": (("moe", "dense"),), "targets": ()})
    records = [_rec("moe", v, s, "v1") for s, v in enumerate([0.90, 0.91, 0.92])]
    records += [_rec("dense", v, s, "v1") for s, v in enumerate([0.80, 0.80, 0.81])]
    page = render_task(spec, records, leaderboard_dir=tmp_path)
    assert "## Against the dense twin" in page and "**better / tie / worse: 1 / 0 / 0**" in page
    assert "| moe | dense | A | 0.910 | 0.803 | 3 | +0.1067 [+0.0923, +0.1210] | better ✓ |" in page
    one_seed = render_task(spec, records[:1] + records[3:4], leaderboard_dir=tmp_path)
    assert "**better / tie / worse: 0 / 0 / 0; 1 n too small**" in one_seed
    assert "## Against the dense twin" not in render_task(_spec(), records, leaderboard_dir=tmp_path)
