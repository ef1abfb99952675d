"""``zoo predict`` on TimeMoDE runs: generated windows of a pre-training domain, of an unseen domain prompted as the
test protocol prompts it, and of a new domain given by its example series, in the domain's own units; the same seed
giving the same windows; the prompt bootstrap (no noise) handing back exactly the example windows, which shows the
few-shot prompt and its normaliser round trip; TimeVAE; an unconditional multivariate run in its CSV's units; and
the Python API's load -> predict round trip equal to the file the command wrote."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from zoo_testing import tiny_trained_run

from zoo.api import load_run, predict
from zoo.cli.main import main

SEQ_LEN = 8  # the conformance case's windows (tasks/timeseries/generation/spec.py)
BOOTSTRAP = "--model=zoo_tasks.timeseries.generation.bootstrap.PromptBootstrap"

pytestmark = pytest.mark.slow(reason="trains tiny TimeMoDE runs, then generates from them")


def read_samples(folder, channels=1):
    """(rows, samples (n, L, C) float) of samples.csv, checking its row order (sample, step, channel)."""
    with (folder / "samples.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["sample", "step", "channel", "value"]
    values = np.array([float(r["value"]) for r in rows]).reshape(-1, SEQ_LEN, channels)
    assert [int(r["step"]) for r in rows[: SEQ_LEN * channels : channels]] == list(range(SEQ_LEN))
    assert [int(r["sample"]) for r in rows[:: SEQ_LEN * channels]] == list(range(len(values)))
    return rows, values


def write_examples(path, steps=60):
    """A new domain: one CSV, two value columns (two series) of ``steps`` hourly rows."""
    t = np.arange(steps)
    lines = ["date,a,b"]
    for i in t:
        lines.append(
            f"2024-01-{1 + i // 24:02d} {i % 24:02d}:00,{50 + 10 * np.sin(i / 3):.3f},{20 + 5 * np.cos(i / 4):.3f}"
        )
    path.write_text("\n".join(lines) + "\n")
    return np.array([[50 + 10 * np.sin(i / 3), 20 + 5 * np.cos(i / 4)] for i in t]).round(3)


@pytest.fixture(scope="module")
def timemode_run(tmp_path_factory):
    return tiny_trained_run("timemode", "timemode", tmp_path_factory.mktemp("timemode"))


def test_zoo_predict_writes_generated_windows_of_a_training_domain_and_a_picture(timemode_run, capsys):
    out = timemode_run / "predictions" / "cli"
    assert main(["predict", str(timemode_run), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"wrote 2 files to {out}" in printed
    assert "16 generated windows of fred_md (in-domain, 100 prompt windows)" in printed and "MDD" in printed
    rows, samples = read_samples(out)
    assert samples.shape == (16, SEQ_LEN, 1) and np.isfinite(samples).all()
    assert {r["channel"] for r in rows} == {"fred_md"}
    assert (out / "samples.png").stat().st_size > 10_000


def test_the_api_round_trip_equals_the_file_and_the_seed_fixes_the_windows(timemode_run):
    out = timemode_run / "predictions" / "seeded"
    assert (
        main(["predict", str(timemode_run), "--domain", "ett", "--samples", "6", "--seed", "3", "--out", str(out)]) == 0
    )
    run = load_run(timemode_run)
    again = predict(run, domain="ett", samples=6, seed=3).outputs
    np.testing.assert_array_equal(read_samples(out)[1], again["samples"])
    assert again["domain"] == "ett" and again["prompts"].shape == (100, SEQ_LEN)
    other = predict(run, domain="ett", samples=6, seed=4).outputs["samples"]
    assert not np.allclose(other, again["samples"])


def test_an_unseen_domain_is_prompted_with_the_test_protocols_few_shot_windows(timemode_run):
    run = load_run(timemode_run)
    outputs = predict(run, domain="stock", k=10, samples=4).outputs
    fewshot = run.datamodule.fewshot["stock"]  # set up by the prediction
    np.testing.assert_array_equal(outputs["prompts"], fewshot.prompts[10])  # normalised, then mapped back exactly
    np.testing.assert_array_equal(outputs["real"][..., 0], fewshot.test)
    assert outputs["samples"].shape == (4, SEQ_LEN, 1)


def test_a_new_domain_from_example_series_and_bad_options_are_one_line(timemode_run, tmp_path, capsys):
    examples = tmp_path / "shop.csv"
    write_examples(examples)
    out = tmp_path / "shop"
    assert main(["predict", str(timemode_run), "--examples", str(examples), "--samples", "5", "--out", str(out)]) == 0
    assert "5 generated windows of shop (few-shot, 14 prompt windows)" in capsys.readouterr().out  # 2 series x 7
    rows, samples = read_samples(out)
    assert {r["channel"] for r in rows} == {"shop"} and np.isfinite(samples).all()
    for option, message in (
        (["--domain", "mars"], "--domain 'mars' is not a domain of this run"),
        (["--domain", "stock", "--k", "4"], "drawn for k in [3, 10, 100]"),
        (["--domain", "ett", "--examples", str(examples)], "not both"),
        (["--samples", "0"], "--samples must be >= 1"),
        (["--examples", str(tmp_path / "none.csv")], "no folder or CSV file at"),
    ):
        assert main(["predict", str(timemode_run), *option]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and message in err, (option, err)


def test_the_bootstrap_without_noise_hands_back_the_example_windows_in_their_units(tmp_path):
    run = tiny_trained_run("timemode", "timemode", tmp_path, extra=(BOOTSTRAP, "--model.init_args.noise=0"))
    examples = tmp_path / "shop.csv"
    values = write_examples(examples)
    windows = np.concatenate([values[s : s + SEQ_LEN, c][None] for c in (0, 1) for s in range(0, 56, SEQ_LEN)])
    out = tmp_path / "shop"
    assert main(["predict", str(run), "--examples", str(examples), "--samples", "14", "--out", str(out)]) == 0
    np.testing.assert_allclose(read_samples(out)[1][..., 0], windows, rtol=1e-12)
    three = predict(load_run(run), examples=str(examples), k=3, samples=6).outputs
    assert three["prompts"].shape == (3, SEQ_LEN)
    np.testing.assert_allclose(three["samples"][..., 0], np.repeat(three["prompts"], 2, axis=0), rtol=1e-12)


def test_timevae_generates_from_its_posterior(tmp_path):
    extra = ("--model=zoo_tasks.timeseries.generation.timevae.TimeVAE", "--model.init_args.hidden_sizes=[8, 8]")
    run = tiny_trained_run("timemode", "timemode", tmp_path, extra=extra)
    outputs = predict(load_run(run), domain="ett", samples=4, seed=1).outputs
    assert outputs["samples"].shape == (4, SEQ_LEN, 1) and np.isfinite(outputs["samples"]).all()


def test_an_unconditional_run_generates_windows_inside_its_csvs_range(tmp_path, capsys):
    mine = tmp_path / "plant.csv"
    t = np.arange(120)
    columns = np.stack([np.sin(t / 4), 100 + 10 * np.cos(t / 7), t / 10.0], axis=1)
    mine.write_text(
        "date,flow,temp,level\n" + "".join(f"{i}," + ",".join(map(str, row)) + "\n" for i, row in enumerate(columns))
    )
    extra = (
        "--data=zoo_tasks.timeseries.generation.multivariate_data.MultivariateWindowsDataModule",
        f"--data.init_args.path={mine}",
        *("--data.init_args.seq_len=8", "--data.init_args.batch_size=3"),
        *("--model.init_args.prompted=false", "--model.init_args.router_prompt=false", "--model.init_args.channels=3"),
    )
    run = tiny_trained_run("timemode", "timemode", tmp_path, extra=extra)
    out = tmp_path / "generated"
    assert main(["predict", str(run), "--samples", "5", "--out", str(out)]) == 0
    rows, samples = read_samples(out, channels=3)
    assert [r["channel"] for r in rows[:3]] == ["flow", "temp", "level"]
    low, high = columns.min(0) - 1e-4, columns.max(0) + 1e-4  # the sampler clips to [-1, 1]: the CSV's range
    assert samples.shape == (5, SEQ_LEN, 3) and np.all((samples >= low) & (samples <= high))  # (float32 cells)
    assert (out / "samples.png").stat().st_size > 10_000
    assert main(["predict", str(run), "--domain", "ett"]) == 2
    assert "generates unconditionally" in capsys.readouterr().err
