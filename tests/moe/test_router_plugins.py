"""Routers as plugins (entry-point group ``zoo.routers``): a third party's router works by name wherever a built-in
router's name does (``zoo.moe.MoE``, a task's ``router``, ``router_kwargs``, the capability checks); its class declares
its capabilities as a built-in router's does; a plugin that clashes with a built-in name, fails to import or names no
router is refused in one line and shown as broken by ``zoo list``; the built-in routers are untouched.

The fast tests declare entry points in this process (``importlib.metadata.entry_points`` replaced, the toy router's
sources on ``sys.path``); the slow ones pip-install ``tests/fixtures/toy_router`` into a folder of its own, as a user
would, and run Python with it on ``PYTHONPATH`` (nothing is installed into this environment)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
import torch
from zoo_testing import REPO, hang_guard, run_zoo

import zoo.moe.routers.registry as registry
from zoo.errors import ConfigError
from zoo.moe import MoE, make_router, require_router, routers_that_apply
from zoo.moe.routers import BUILTIN_ROUTERS, ENTRY_POINT_GROUP, ROUTERS, router_sources

TOY_ROUTER = REPO / "tests" / "fixtures" / "toy_router"
DOC = REPO / "docs" / "writing-a-router.md"
DOC_FILE = re.compile(r"^```(?:toml|python)\n# file: (\S+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
DOC_CHECK = re.compile(r"^```python\n(import torch\n.*?check_router_step\(.*?)^```$", re.MULTILINE | re.DOTALL)
TOY = "zoo_toy_router.router:SigmoidTopKRouter"
BUILTIN_NAMES = "topk noisy_topk sigmoid_bias expert_choice dtop_p soft dirichlet kern grouped".split()


@pytest.fixture()
def declare(monkeypatch):
    """``declare(name=target, ...)``: those ``zoo.routers`` entry points (and no other) are installed in this
    process, the toy router's package importable from its sources; undone after the test."""
    monkeypatch.syspath_prepend(str(TOY_ROUTER))
    declared: list[EntryPoint] = []
    monkeypatch.setattr(registry, "entry_points", lambda group: [ep for ep in declared if ep.group == group])
    monkeypatch.setattr(ROUTERS, "_path", None)  # both restored after the test: the real metadata is read again
    monkeypatch.setattr(ROUTERS, "_points", {})

    def _declare(**targets: str) -> None:
        declared[:] = [EntryPoint(name, target, ENTRY_POINT_GROUP) for name, target in targets.items()]
        ROUTERS._path = None

    yield _declare
    for name in [m for m in sys.modules if m == "zoo_toy_router" or m.startswith("zoo_toy_router.")]:
        del sys.modules[name]


def _one_step(layer: MoE, steps: int = 1) -> torch.Tensor:
    """Train ``layer`` ``steps`` SGD steps on a fixed regression batch; returns the router's gate before them."""
    before = layer.router.gate.weight.detach().clone()
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.5)
    x, target = torch.randn(32, 8), torch.randn(32, 8)
    for _ in range(steps):
        y, routing = layer(x)
        loss = (y - target).pow(2).mean() + layer.aux_loss(routing)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return before


def test_without_plugins_the_registry_is_the_builtin_routers_in_their_order(declare):
    declare()
    assert list(ROUTERS) == list(BUILTIN_ROUTERS) == BUILTIN_NAMES
    assert all(ROUTERS[name] is BUILTIN_ROUTERS[name] for name in BUILTIN_NAMES) and len(ROUTERS) == 9
    assert [s.origin for s in router_sources()] == ["built-in"] * 9


def test_a_plugin_router_trains_moe_by_name_with_its_router_kwargs(declare):
    declare(toy_sigmoid=TOY)
    torch.manual_seed(0)
    layer = MoE(8, 16, 4, top_k=2, router="toy_sigmoid", router_kwargs={"temperature": 2.0}, aux_weights={"z": 1e-3})
    assert type(layer.router).__name__ == "SigmoidTopKRouter" and layer.router.temperature == 2.0
    before = _one_step(layer)
    assert not torch.equal(before, layer.router.gate.weight), "the step did not train the plugin's router"
    with pytest.raises(ConfigError, match=r"router 'toy_sigmoid' takes no \['tau'\]; it takes: temperature"):
        MoE(8, 16, 4, router="toy_sigmoid", router_kwargs={"tau": 1.0})


def test_a_plugin_routers_declared_capabilities_are_checked_like_a_builtins(declare):
    """The toy declares ``convex_weights = False`` (raw sigmoid weights): a convex blend refuses it by name, a
    per-token mixture takes it, and the routers that apply are listed with the plugin's among them."""
    declare(toy_sigmoid=TOY)
    with pytest.raises(ConfigError) as err:
        make_router("toy_sigmoid", 8, 4, mixture="an image blend", needs=("per_token_choice", "convex_weights"))
    assert str(err.value).startswith(
        "router 'toy_sigmoid' cannot route an image blend: a token's expert weights must sum to 1"
    ) and "\n" not in str(err.value)
    assert require_router("toy_sigmoid", "a per-token gate").convex_weights is False
    assert "toy_sigmoid" in routers_that_apply(["per_token_choice", "fixed_k", "sparse"])
    assert "toy_sigmoid" not in routers_that_apply(["convex_weights"])


def test_looking_up_names_imports_no_plugin_until_its_router_is_used(declare):
    declare(toy_sigmoid=TOY)
    assert "toy_sigmoid" in ROUTERS and "toy_sigmoid" in sorted(ROUTERS)
    make_router("topk", 8, 4)
    assert "zoo_toy_router" not in sys.modules, "a name lookup or a built-in router imported the plugin"
    make_router("toy_sigmoid", 8, 4)
    assert "zoo_toy_router.router" in sys.modules


def test_a_plugin_named_like_a_builtin_router_is_refused_in_one_line(declare):
    """Neither class silently takes the name: the built-in's records and the plugin author both see the clash."""
    declare(topk=TOY)
    with pytest.raises(ConfigError) as err:
        MoE(8, 16, 4, router="topk")
    assert str(err.value) == (
        f"router 'topk' is a built-in router and also declared by plugin an unknown distribution (entry point "
        f"topk = {TOY}); the name is refused until the plugin's entry point is renamed"
    )
    assert "topk" not in routers_that_apply() and make_router("soft", 8, 4).num_experts == 4
    assert [s.error is not None for s in router_sources() if s.name == "topk"] == [True, True]


def test_two_plugins_declaring_one_name_are_refused(declare, monkeypatch):
    declare(toy_sigmoid=TOY)
    twice = [*registry.entry_points(ENTRY_POINT_GROUP)] * 2
    monkeypatch.setattr(registry, "entry_points", lambda group: twice)
    ROUTERS._path = None
    with pytest.raises(ConfigError, match="^router 'toy_sigmoid' is declared by several plugins: .*; rename one$"):
        make_router("toy_sigmoid", 8, 4)


@pytest.mark.parametrize(
    "target, line",
    [
        (
            "zoo_toy_router.does_not_exist:Router",
            "router 'broken' of plugin an unknown distribution (entry point broken = zoo_toy_router.does_not_exist"
            ":Router) failed to import: ModuleNotFoundError: No module named 'zoo_toy_router.does_not_exist'",
        ),
        (
            "zoo_toy_router.router:describe",
            "router 'broken' of plugin an unknown distribution (entry point broken = zoo_toy_router.router:describe) "
            "is not a router: the entry point must name a subclass of zoo.moe.Router, got function",
        ),
        (
            "zoo.moe:Router",
            "router 'broken' of plugin an unknown distribution (entry point broken = zoo.moe:Router) is not a "
            "router: the entry point must name a subclass of zoo.moe.Router, got Router",
        ),
    ],
    ids=["fails-to-import", "a-function", "the-base-class"],
)
def test_a_broken_plugin_is_refused_in_one_line_and_hides_no_other_router(declare, target, line):
    declare(broken=target, toy_sigmoid=TOY)
    with pytest.raises(ConfigError) as err:
        MoE(8, 16, 4, router="broken")
    assert str(err.value) == line
    assert ROUTERS.get("toy_sigmoid") is not None and "broken" not in routers_that_apply()
    sources = {s.name: s for s in router_sources()}
    assert sources["broken"].error == line and sources["toy_sigmoid"].error is None


def test_the_docs_example_is_the_toy_routers_code():
    """docs/writing-a-router.md shows the installed toy's files: its router module (the toy adds only the function
    its broken entry point names) and every line of its pyproject.toml (the toy adds the broken entry points)."""
    files = dict(DOC_FILE.findall(DOC.read_text()))
    assert sorted(files) == ["pyproject.toml", "zoo_toy_router/__init__.py", "zoo_toy_router/router.py"]
    assert (TOY_ROUTER / "zoo_toy_router" / "__init__.py").read_text() == files["zoo_toy_router/__init__.py"]
    assert (TOY_ROUTER / "zoo_toy_router" / "router.py").read_text().startswith(files["zoo_toy_router/router.py"])
    toy_lines = set((TOY_ROUTER / "pyproject.toml").read_text().splitlines())
    assert [line for line in files["pyproject.toml"].splitlines() if line not in toy_lines] == []


# --- installed with pip, as a third party would -------------------------------------------------------------------


@pytest.fixture(scope="module")
def router_site(tmp_path_factory) -> Path:
    """``tests/fixtures/toy_router`` pip-installed (its own pyproject.toml, entry points) into a folder of its own."""
    source = tmp_path_factory.mktemp("router_src") / "toy_router"
    shutil.copytree(TOY_ROUTER, source)  # pip writes build/ next to the sources: keep the repo clean
    site = tmp_path_factory.mktemp("router_site")
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    subprocess.run([*pip, "--disable-pip-version-check", "--target", str(site), str(source)], check=True, cwd=source)
    return site


@pytest.fixture()
def site_env(router_site, tmp_path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(router_site), str(REPO), env.get("PYTHONPATH", "")])
    env["ZOO_CACHE_DIR"] = str(tmp_path / "cache")
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


# run in a fresh interpreter with the toy router installed; prints one JSON line of what it saw
INSTALLED = """
import json, sys
from zoo.cli.list_cmd import list_tasks
list_tasks(["--no-routers"])
seen = {"torch after list --no-routers": "torch" in sys.modules}
import torch, zoo.moe
from zoo.moe import MoE, ConfigError
from zoo.moe.routers import ROUTERS
seen["metadata read at import"] = ROUTERS._path is not None
seen["plugin imported by names"] = "toy_sigmoid" in ROUTERS and "zoo_toy_router" in sys.modules
torch.manual_seed(0)
layer = MoE(8, 16, 4, router="toy_sigmoid", router_kwargs={"temperature": 2.0})
x, target = torch.randn(32, 8), torch.randn(32, 8)
before = layer.router.gate.weight.detach().clone()
y, routing = layer(x)
loss = (y - target).pow(2).mean() + layer.aux_loss(routing)
loss.backward()
torch.optim.SGD(layer.parameters(), lr=0.5).step()
seen["trained"] = type(layer.router).__module__ + " " + str(not torch.equal(before, layer.router.gate.weight))
from zoo.moe.testing import check_router_step
from zoo_tasks.timeseries.seer import SEERForecaster
seer = SEERForecaster(router="toy_sigmoid", seq_len=32, pred_len=8, num_channels=2, d_model=16, n_heads=2, d_ff=32,
                      num_experts=4, top_k=2).train()
check_router_step(seer, *seer.loss_and_routing((torch.randn(3, 32, 2), torch.randn(3, 8, 2))))
seen["seer"] = type(seer.net.embedding.moe.router).__name__
from zoo_tasks.splatting.router import VolumePixelRouter
for name, build in [("moe_gs", lambda: VolumePixelRouter([4, 4], router="toy_sigmoid"))] + [
    (r, lambda r=r: MoE(8, 16, 4, router=r)) for r in ("topk", "toy_missing", "toy_not_a_router")
]:
    try:
        build()
        seen[name] = "accepted"
    except ConfigError as exc:
        seen[name] = str(exc)
print("SEEN " + json.dumps(seen))
"""


@pytest.mark.slow(reason="pip-installs the toy router, then trains with it in a subprocess")
def test_the_installed_router_trains_by_name_and_is_refused_where_its_capabilities_do_not_fit(site_env, tmp_path):
    """... and the doc's "Check it" snippet runs as written."""
    (doc_check,) = DOC_CHECK.findall(DOC.read_text())
    code = INSTALLED + doc_check
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=site_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=hang_guard(300),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.split("SEEN ")[-1])
    assert seen["torch after list --no-routers"] is False
    assert seen["metadata read at import"] is False and seen["plugin imported by names"] is False
    assert seen["trained"] == "zoo_toy_router.router True"
    assert seen["seer"] == "SigmoidTopKRouter"  # SEER needs per-token choice only: the toy has it
    assert seen["moe_gs"].startswith(  # MoE-GS blends images: it needs convex weights, which the toy declares it lacks
        "router 'toy_sigmoid' cannot route MoE-GS's per-pixel expert blend: a token's expert weights must sum to 1"
    )
    origin = "plugin zoo-toy-router 0.1.0 (entry point"
    assert seen["topk"] == (
        f"router 'topk' is a built-in router and also declared by {origin} topk = {TOY}); the name is refused "
        "until the plugin's entry point is renamed"
    )
    assert seen["toy_missing"].startswith(f"router 'toy_missing' of {origin} toy_missing = ")
    assert seen["toy_missing"].endswith(
        "failed to import: ModuleNotFoundError: No module named 'zoo_toy_router.does_not_exist'"
    )
    assert seen["toy_not_a_router"].endswith(
        "is not a router: the entry point must name a subclass of zoo.moe.Router, got function"
    )


@pytest.mark.slow(reason="pip-installs the toy router, then runs zoo list in a subprocess")
def test_zoo_list_shows_each_router_with_its_distribution_and_the_broken_ones(site_env, tmp_path):
    out = run_zoo(["list"], site_env, tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    routers = out.stdout.split("\nrouters: ")[1].splitlines()
    assert routers[0] == "9 built-in, 4 from plugins; 4 cannot be used"
    rows = {" ".join(line.split()[:2]): line for line in routers[1:] if not line.startswith("        error: ")}
    assert rows["dirichlet built-in"].split() == ["dirichlet", "built-in"]
    assert rows["toy_sigmoid zoo-toy-router"].split() == ["toy_sigmoid", "zoo-toy-router", "0.1.0", f"({TOY})"]
    for name in ("toy_missing", "toy_not_a_router", "topk"):
        assert rows[f"{name} zoo-toy-router"].endswith("  [BROKEN]"), name
    assert rows["topk built-in"].endswith("built-in  [BROKEN]")
    errors = [line.strip() for line in routers if line.startswith("        error: ")]
    assert len(errors) == 4 and any("No module named 'zoo_toy_router.does_not_exist'" in e for e in errors)
