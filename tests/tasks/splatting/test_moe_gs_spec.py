"""The moe_gs spec: every row's config exists and names a class of this task, rows run in dependency order."""

from __future__ import annotations

import yaml

from zoo.registry import load_object
from zoo_tasks.splatting.spec import MOE_GS


def test_rows_configs_and_order():
    methods = [row.method for row in MOE_GS.benchmark]
    assert methods == ["mlp", "hexplane", "trajectory", "moe_gs", "moe_gs_pixel", "moe_gs_volume", "distilled"]
    exports = set()
    for row in MOE_GS.benchmark:
        config = yaml.safe_load(MOE_GS.config_path(row.config).read_text())
        model = config["model"]
        cls = load_object(model["class_path"].rpartition(".")[0] + ":" + model["class_path"].rpartition(".")[2])
        assert cls.__module__.startswith("zoo_tasks.splatting")
        args = model["init_args"]
        # a row only reads exports that an earlier row writes (zoo reproduce runs rows in order)
        for needed in args.get("experts", []) + ([args["teacher"]] if "teacher" in args else []):
            assert needed in exports, (row.method, needed)
        if args.get("export_name"):
            exports.add(args["export_name"])
        assert row.reduced and row.quick_overrides


def test_bench_is_registered():
    assert MOE_GS.benchmarks == {"splat": "zoo_tasks.splatting.bench:main"}
    assert callable(load_object(MOE_GS.benchmarks["splat"]))
