"""Router names -> router classes: the built-in routers and those of installed plugins (entry-point group
``zoo.routers``).

A third-party distribution adds a router by declaring, in its ``pyproject.toml``::

    [project.entry-points."zoo.routers"]
    my_router = "my_pkg.module:MyRouter"

where ``MyRouter`` subclasses ``zoo.moe.Router`` (docs/writing-a-router.md has a complete example). The name then
works wherever a built-in router's does: ``zoo.moe.MoE(router="my_router", router_kwargs=...)``, every task's
``router`` / ``router_kwargs``, ``make_router``, ``require_router`` and ``routers_that_apply``; ``zoo list`` shows
it with its distribution and version. Capabilities (``zoo.moe.CAPABILITIES``: ``per_token_choice``, ``fixed_k``,
``sparse``, ``convex_weights``) are class attributes of the router, declared by a plugin exactly as by a built-in
router (``convex_weights = False``); the `Router` base class defaults each to True.

Discovery is lazy: importing ``zoo.moe`` (or this module) reads no metadata and imports no plugin. The first lookup
of a name reads the entry points' names with ``importlib.metadata`` (again whenever ``sys.path`` changes), and a
plugin's module is imported only when its name is looked up (``ROUTERS[name]``, building a router) or when every
router is checked (``router_sources``, ``routers_that_apply``).

A plugin is refused with one ConfigError line when its name is used, and shown as broken by ``zoo list``, when its
module fails to import, when its entry point names something other than a `Router` subclass, or when its name is
already taken: by a built-in router (the name is then refused, not silently given to either class, until the
plugin's entry point is renamed) or by another plugin.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points

from zoo.moe.errors import ConfigError
from zoo.moe.routers.base import Router
from zoo.moe.routers.dirichlet import DirichletRouter
from zoo.moe.routers.dtop_p import DTopPRouter
from zoo.moe.routers.expert_choice import ExpertChoiceRouter
from zoo.moe.routers.grouped import GroupedRouter
from zoo.moe.routers.kern import KernRouter
from zoo.moe.routers.noisy_topk import NoisyTopKRouter
from zoo.moe.routers.sigmoid_bias import SigmoidBiasRouter
from zoo.moe.routers.soft import SoftRouter
from zoo.moe.routers.topk import TopKRouter

ENTRY_POINT_GROUP = "zoo.routers"

BUILTIN_ROUTERS: dict[str, type[Router]] = {
    "topk": TopKRouter,
    "noisy_topk": NoisyTopKRouter,
    "sigmoid_bias": SigmoidBiasRouter,
    "expert_choice": ExpertChoiceRouter,
    "dtop_p": DTopPRouter,
    "soft": SoftRouter,
    "dirichlet": DirichletRouter,
    "kern": KernRouter,
    "grouped": GroupedRouter,
}
BUILTIN = "built-in"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def plugin_origin(ep: EntryPoint) -> str:
    """``"<distribution> <version>"`` of the installed distribution declaring ``ep``."""
    dist = getattr(ep, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else "an unknown distribution"


def _describe(ep: EntryPoint) -> str:
    return f"plugin {plugin_origin(ep)} (entry point {ep.name} = {ep.value})"


def load_plugin(ep: EntryPoint) -> type[Router]:
    """The `Router` subclass ``ep`` names; raises ConfigError (one line) when it does not import or is no router."""
    try:
        obj = ep.load()
    except Exception as exc:  # noqa: BLE001 - any failure of a third party's import is reported in one line
        raise ConfigError(f"router {ep.name!r} of {_describe(ep)} failed to import: {_first_line(exc)}") from exc
    if not (isinstance(obj, type) and issubclass(obj, Router) and obj is not Router):
        got = obj.__name__ if isinstance(obj, type) else type(obj).__name__
        raise ConfigError(
            f"router {ep.name!r} of {_describe(ep)} is not a router: the entry point must name a subclass of "
            f"zoo.moe.Router, got {got}"
        )
    return obj


class RouterRegistry(Mapping[str, type[Router]]):
    """Name -> router class, over the built-in routers then the ``zoo.routers`` plugins (see the module docstring).

    Names (``in``, iteration, ``len``) come from metadata alone; ``registry[name]`` imports a plugin's module and
    raises ConfigError (one line) for a broken or clashing plugin, KeyError for an unknown name.
    """

    def __init__(self, builtin: dict[str, type[Router]], group: str = ENTRY_POINT_GROUP):
        self.builtin, self.group = builtin, group
        self._points: dict[str, list[EntryPoint]] = {}
        self._path: tuple[str, ...] | None = None

    def plugin_points(self) -> dict[str, list[EntryPoint]]:
        """Name -> the entry points declaring it (one per distribution), read again whenever ``sys.path`` changed."""
        path = tuple(sys.path)
        if path != self._path:
            points: dict[str, list[EntryPoint]] = {}
            for ep in entry_points(group=self.group):
                points.setdefault(ep.name, []).append(ep)
            self._points, self._path = points, path
        return self._points

    def clash(self, name: str) -> str | None:
        """Why ``name`` is refused because more than one source declares it, or None."""
        points = self.plugin_points().get(name, [])
        if name in self.builtin and points:
            return (
                f"router {name!r} is a built-in router and also declared by {'; '.join(map(_describe, points))}; "
                f"the name is refused until the plugin's entry point is renamed"
            )
        if len(points) > 1:
            return f"router {name!r} is declared by several plugins: {'; '.join(map(_describe, points))}; rename one"
        return None

    def __getitem__(self, name: str) -> type[Router]:
        clash = self.clash(name)
        if clash:
            raise ConfigError(clash)
        if name in self.builtin:
            return self.builtin[name]
        points = self.plugin_points().get(name)
        if not points:
            raise KeyError(name)
        return load_plugin(points[0])

    def __contains__(self, name: object) -> bool:
        return name in self.builtin or name in self.plugin_points()

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self.builtin, *sorted(self.plugin_points())]))

    def __len__(self) -> int:
        return len(set(self.builtin) | set(self.plugin_points()))

    def usable(self) -> dict[str, type[Router]]:
        """Every name whose router loads, in iteration order (imports every plugin; broken ones are left out)."""
        found = {}
        for name in self:
            try:
                found[name] = self[name]
            except ConfigError:
                continue
        return found

    def __repr__(self) -> str:
        return f"RouterRegistry({', '.join(self)})"


@dataclass(frozen=True)
class RouterSource:
    """Where a router name comes from, for ``zoo list``.

    Attributes:
        name: the router's name (``router="..."``).
        origin: ``"built-in"``, or ``"<distribution> <version>"`` of the plugin declaring it.
        target: ``"module:Class"`` of the class (the entry point's value for a plugin).
        error: the one-line ConfigError using the name raises, or None when it can be used.
    """

    name: str
    origin: str
    target: str
    error: str | None = None


ROUTERS = RouterRegistry(BUILTIN_ROUTERS)


def router_sources(registry: RouterRegistry = ROUTERS) -> list[RouterSource]:
    """Every router name with its origin, sorted by name, built-ins before plugins of the same name; imports every
    plugin to check it (a broken one gets its ``error``, nothing raises)."""
    sources = []
    for name in sorted(registry):
        clash = registry.clash(name)
        if name in registry.builtin:
            cls = registry.builtin[name]
            sources.append(RouterSource(name, BUILTIN, f"{cls.__module__}:{cls.__qualname__}", clash))
        for ep in registry.plugin_points().get(name, []):
            error = clash
            if error is None:
                try:
                    load_plugin(ep)
                except ConfigError as exc:
                    error = str(exc)
            sources.append(RouterSource(name, plugin_origin(ep), ep.value, error))
    return sources
