"""The package versions a result file records: ``zoo.runinfo.package_versions()`` (a fixed list), plus every
distribution the run actually loaded among those moe-zoo requires (any extra) and those they require in turn.

The fixed list cannot name every task's stack without growing with each task (MetaWorld for SPHERE, mmdet and
mmcv for DroneDINO, gsplat for MoE-GS), and a record should not claim a package its run never imported. Which
distributions are loaded is read from ``sys.modules`` through ``importlib.metadata.packages_distributions``; in a
process that runs many rows (``zoo reproduce``) that is what the process has loaded so far, a superset of the row's.
"""

from __future__ import annotations

import sys
from functools import cache
from importlib.metadata import PackageNotFoundError, packages_distributions, requires, version

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from zoo.runinfo import package_versions

PROJECT = "moe-zoo"


def _name(requirement: str) -> str:
    """The normalised (PEP 503) distribution name of a requirement string such as ``"mmdet>=3; extra == 'x'"``."""
    return canonicalize_name(Requirement(requirement).name)


@cache
def _candidates() -> frozenset[str]:
    """moe-zoo's requirements (every extra) and their own requirements, normalised names."""
    try:
        direct = {_name(r) for r in requires(PROJECT) or []} - {PROJECT}
    except PackageNotFoundError:
        return frozenset()
    names = set(direct)
    for dist in direct:
        try:
            names |= {_name(r) for r in requires(dist) or [] if "extra ==" not in r}
        except PackageNotFoundError:
            pass
    return frozenset(names)


@cache
def _distributions_by_module() -> dict[str, list[str]]:
    """Top-level module -> distributions providing it: a scan of every installed distribution (~0.3 s), done once
    per process, not once per record."""
    return packages_distributions()


def run_versions() -> dict[str, str]:
    """``package_versions()`` plus the loaded distributions among ``_candidates()``, sorted by name."""
    found = dict(package_versions())
    by_module = _distributions_by_module()
    modules = {m.partition(".")[0] for m in list(sys.modules)}
    loaded = {_name(d) for module in modules for d in by_module.get(module, [])}
    for dist in sorted(loaded & _candidates()):
        if dist not in found:
            try:
                found[dist] = version(dist)
            except PackageNotFoundError:
                pass
    return found
