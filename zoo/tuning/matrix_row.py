"""A matrix row of a staged method: its model is built on the outputs of other benchmark rows, and its router cells
take settings the dense twin's model does not.

Kept out of :mod:`zoo.registry` on purpose: that module is part of every record's code fingerprint
(:mod:`zoo.code_closure`), so a field added to :class:`~zoo.registry.MatrixRow` itself would mark every record of
every task as made by older code although no run's behaviour changes. Fold these fields into ``MatrixRow`` the next
time ``zoo.registry`` changes for a reason that re-runs the records anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

from zoo.registry import MatrixRow


@dataclass(frozen=True)
class StagedMatrixRow(MatrixRow):
    """A :class:`~zoo.registry.MatrixRow` with two more fields.

    Attributes:
        router_overrides: settings of the router cells only, after ``overrides`` (the dense twin can be another
            model class, which would refuse the MoE model's arguments).
        requires: ``"method/dataset"`` of benchmark rows whose outputs the row's model reads when it is built (MoE-GS:
            the stage-1 experts it freezes). ``zoo reproduce matrix`` fits each with its benchmark settings for the
            tuning seed and every seed in ``seeds`` before the row's cells (``zoo.runner.matrix_requires``), and records
            none of them.
    """

    router_overrides: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()


def cell_overrides(matrix: MatrixRow, router: str | None) -> tuple[str, ...]:
    """The matrix settings of the dense twin's cell (``router`` None) or of a router's cell."""
    return tuple(matrix.overrides) + (getattr(matrix, "router_overrides", ()) if router is not None else ())


def requires(matrix: MatrixRow) -> tuple[str, ...]:
    """The benchmark rows a matrix row's model needs run first (none for a plain ``MatrixRow``)."""
    return tuple(getattr(matrix, "requires", ()))
