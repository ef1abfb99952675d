import yaml

from zoo.registry import get_task
from zoo_tasks.worldmodel.module import METHODS


def test_every_row_names_an_existing_config_of_its_method():
    spec = get_task("westworld")
    assert spec.default_config == "westworld.yaml"
    methods = {row.method for row in spec.benchmark}
    assert {"westworld", "dense", "no_structure", "trajworld", "mlp_ensemble", "repeat_last", "mean"} == methods
    for row in spec.benchmark:
        cfg = yaml.safe_load(spec.config_path(row.config).read_text())
        assert cfg["model"]["init_args"]["method"] == row.method
        assert cfg["model"]["init_args"]["method"] in METHODS
        data = cfg["data"]["init_args"]
        assert cfg["model"]["init_args"]["prefix"] == data["prefix"]
        assert data["prefix"] + data["horizon"] + 1 in (16, 32, 64, 128, 256)  # the scan's length, with the CLS
    datasets = {row.dataset for row in spec.benchmark}
    assert {"scaling: 3 robots", "scaling: 6 robots"} <= datasets
    for target in spec.targets:
        for name in (
            getattr(target, "method", None),
            getattr(target, "baseline", None),
            *getattr(target, "others", ()),
        ):
            assert name is None or name in methods
