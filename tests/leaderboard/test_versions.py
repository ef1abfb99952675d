"""Records name the versions of the task stacks they loaded (MetaWorld, mmdet, gsplat, ...), not only the fixed list
of ``zoo.runinfo``, and never a package the process did not load."""

import sys

from zoo.leaderboard.versions import _name, run_versions
from zoo.runinfo import package_versions


def test_a_loaded_requirement_is_recorded_and_an_unloaded_one_is_not(monkeypatch):
    import scipy  # noqa: F401 - a requirement of the `mil` extra, outside runinfo's fixed list

    versions = run_versions()
    assert versions["scipy"] and package_versions().items() <= versions.items()
    for module in [m for m in sys.modules if m == "scipy" or m.startswith("scipy.")]:
        monkeypatch.delitem(sys.modules, module)
    assert "scipy" not in run_versions()


def test_requirement_names_are_normalised():
    assert _name("torch-geometric>=2.5; extra == 'graphs'") == "torch-geometric"
    assert _name("PyYAML>=6") == "pyyaml" and _name("typing_extensions") == "typing-extensions"
