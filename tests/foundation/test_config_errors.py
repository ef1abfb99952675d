"""Every config error prints a few lines: the error first, the offending key with its valid choices, one tip; no
jsonargparse usage wall, no traceback, no run folder left behind (issue 16 item 4)."""

import pytest
from zoo_testing import REPO

from zoo.cli.main import main

DIGITS = str(REPO / "configs" / "mammoth" / "digits.yaml")

# (extra arguments, texts the message must contain)
CASES = {
    "unknown class_path": (
        ["--model.class_path", "zoo_tasks.mil.module.MILModel"],
        ["model.class_path", "zoo_tasks.mil.module.MILModel", "did you mean 'zoo_tasks.mil.module.MILModule'"],
    ),
    "typo'd key": (
        ["--model.init_args.aggregatr", "abmil"],
        ["model.init_args.aggregatr", "did you mean 'aggregator'", "projection"],
    ),
    "typo'd key in a config file": (
        ["--config", "{tmp}/typo.yaml"],
        ["model.init_args.num_expert", "did you mean 'num_experts'"],
    ),
    "wrong type": (["--model.init_args.dim", "wide"], ["model.init_args.dim", "expected int", "'wide'"]),
    "bad enum": (["--trainer.precision", "17"], ["trainer.precision", "bf16-mixed"]),
    "bad choice in task code": (["--model.init_args.aggregator", "median"], ["aggregator", "gated_abmil"]),
    "negative size": (["--data.init_args.batch_size", "-2"], ["batch_size", "-2"]),
    "negative trainer setting": (["--trainer.max_epochs", "-3"], ["max_epochs", "-3"]),
    "missing config file": (["--config", "{tmp}/nope.yaml"], ["config", "nope.yaml"]),
    "unknown option": (["--trainer.max_epocs", "3"], ["--trainer.max_epocs", "did you mean '--trainer.max_epochs'"]),
    "unknown accelerator": (["--trainer.accelerator", "tpux"], ["accelerator", "cpu"]),
    "missing dataset": (
        ["--data.class_path", "zoo_tasks.mil.mil_data.MUSK1DataModule", "--data.init_args.fold", "0"],
        ["dataset 'MIL' not found", "{tmp}/empty"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_config_gives_a_short_error(case, tmp_path, monkeypatch, capfd):
    args, needles = CASES[case]
    (tmp_path / "typo.yaml").write_text("model:\n  init_args:\n    num_expert: 4\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "empty"))
    monkeypatch.setenv("ZOO_DATA_MIRROR", str(tmp_path / "empty"))
    monkeypatch.setenv("https_proxy", "http://127.0.0.1:9")  # a download fails fast, on- and offline
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    argv = ["fit", "--config", DIGITS, "--trainer.fast_dev_run", "1", *(a.format(tmp=tmp_path) for a in args)]
    code = main(argv)
    out, err = capfd.readouterr()
    text = out + err
    assert code == 2, text
    assert "Traceback" not in text and "usage:" not in text, text
    assert len(text.strip().splitlines()) <= 15, text
    message = err[err.index("zoo: error:") :]
    assert len(message.strip().splitlines()) <= (7 if case == "missing dataset" else 3), message
    for needle in needles:
        assert needle.format(tmp=tmp_path) in message, message
    assert not list((tmp_path / "runs").rglob("*")), "a failed start left its run folder behind"
