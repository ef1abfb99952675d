"""DroneDINO spec: every benchmark row's config exists and parses, targets name methods that have rows."""

from __future__ import annotations

import yaml

from zoo.registry import get_task
from zoo_tasks.detection.spec import DRONEDINO


def test_rows_configs_exist_and_name_the_module():
    for row in DRONEDINO.benchmark:
        path = DRONEDINO.config_path(row.config)
        cfg = yaml.safe_load(path.read_text())
        assert cfg["model"]["class_path"] == DRONEDINO.model.replace(":", ".")
        assert cfg["data"]["class_path"] == DRONEDINO.datamodules["drone"].replace(":", ".")
        assert row.reduced and row.quick_overrides


def test_targets_refer_to_benchmarked_methods_and_the_task_loads():
    methods = {(r.method, r.dataset) for r in DRONEDINO.benchmark}
    for target in DRONEDINO.targets:
        names = [target.method, *getattr(target, "others", ())]
        datasets = getattr(target, "datasets", ()) or (getattr(target, "dataset", None),)
        for name in names:
            assert any(m == name and (d in datasets or None in datasets) for m, d in methods), (name, datasets)
    assert get_task("dronedino") is DRONEDINO or get_task("dronedino").name == "dronedino"
