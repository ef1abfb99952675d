"""`zoo bench moe --quick` runs end to end and writes its JSON and table (a smoke test, not a timing)."""

import json

from zoo.bench.moe import main


def test_bench_quick_writes_json_and_markdown(tmp_path):
    out = tmp_path / "moe.json"
    assert (
        main(
            [
                "--quick",
                "--out",
                str(out),
                "--experts",
                "4",
                "--reps",
                "1",
                "--tokens",
                "64",
                "--threads",
                "1",
            ]
        )
        == 0
    )
    result = json.loads(out.read_text())
    rows = result["results"]["4"]
    assert {"floor", "ours", "loop_mask", "gshard", "naive_slice"} <= set(rows)
    assert all(rows[r]["max_abs_diff_vs_ours"] < 1e-4 for r in ("loop_mask", "naive_slice", "unbind"))
    assert result["machine"]["torch"] and result["machine"]["threads"] >= 1
    assert "| implementation |" in out.with_suffix(".md").read_text()
