"""A time-series model's config arguments are its network's plus its own training settings, each written once:
SEER's and PatchTST's LightningModules build their network in ``build_network``, TimeMoDE passes ``**network``
to its DiT, none repeats the network's signature, and LightningCLI still reads every argument, default and type
from the network (jsonargparse follows ``**network`` into that one call)."""

from __future__ import annotations

import pytest
from jsonargparse import ArgumentError
from zoo_testing import class_parser

from zoo.utils.signature import signature_defaults
from zoo_tasks.timeseries.forecaster import Forecaster
from zoo_tasks.timeseries.generation.dit import DiTDenoiser
from zoo_tasks.timeseries.generation.module import TimeMoDE
from zoo_tasks.timeseries.patchtst import PatchTSTForecaster, PatchTSTNet
from zoo_tasks.timeseries.seer import SEERForecaster, SEERNet

PAIRS = [(SEERForecaster, SEERNet), (PatchTSTForecaster, PatchTSTNet)]


def config_defaults(model_class) -> dict:
    return class_parser(model_class).parse_args([]).model.as_dict()


@pytest.mark.parametrize(("model_class", "network"), PAIRS, ids=["seer", "patchtst"])
def test_the_config_takes_the_networks_arguments_and_the_training_settings_with_their_defaults(model_class, network):
    expected = {**signature_defaults(Forecaster.__init__), **signature_defaults(network)}
    assert config_defaults(model_class) == expected


@pytest.mark.parametrize(("model_class", "network"), PAIRS, ids=["seer", "patchtst"])
def test_no_wrapper_repeats_its_networks_signature(model_class, network):
    assert "__init__" not in vars(model_class)
    assert type(model_class(num_channels=3, d_model=16, n_heads=2, d_ff=16).net) is network


@pytest.mark.parametrize("model_class", [SEERForecaster, PatchTSTForecaster, TimeMoDE], ids=["seer", "patchtst", "dit"])
def test_the_networks_arguments_are_type_checked_like_the_models_own(model_class):
    """A network argument of the wrong type is refused when the config is parsed, as before the change (a call through
    a ``staticmethod`` alias left them unvalidated: any value passed on to the network)."""
    parser = class_parser(model_class)
    assert parser.parse_args(["--model.d_model", "32"]).model.d_model == 32
    with pytest.raises(ArgumentError, match="d_model"):
        parser.parse_args(["--model.d_model", "wide"])


def test_timemode_takes_its_dits_arguments_beside_its_own():
    expected = {**signature_defaults(TimeMoDE.__init__), **signature_defaults(DiTDenoiser)}
    assert config_defaults(TimeMoDE) == expected
    assert not set(signature_defaults(TimeMoDE.__init__)) & set(signature_defaults(DiTDenoiser))


@pytest.mark.parametrize(
    ("make", "model_class"),
    [
        (lambda: SEERForecaster(num_channels=3, d_model=16, n_heads=2, d_ff=16), SEERForecaster),
        (lambda: TimeMoDE(seq_len=24, d_model=16, n_heads=2), TimeMoDE),
    ],
    ids=["seer", "timemode"],
)
def test_the_saved_hyperparameters_hold_the_networks_defaults_too(make, model_class):
    """A model built in Python saves what a config would: every argument, the network's defaults included."""
    model = make()
    assert model.hparams["d_model"] == 16 and model.hparams["num_experts"] == 8
    assert set(model.hparams) == set(config_defaults(model_class))
