"""Continual-RL metrics of a success matrix (Continual World, Wołczyk et al. 2021, arXiv 2105.10919, Sec. 3).

``matrix[i][j]`` = success rate on task j after training stage i (task i) of the sequence, i, j < n.
"""

from __future__ import annotations

from collections.abc import Sequence


def average_final_success(matrix: Sequence[Sequence[float]]) -> float:
    """Mean success over all tasks after the last stage."""
    return sum(matrix[-1]) / len(matrix[-1])


def forgetting(matrix: Sequence[Sequence[float]]) -> float | None:
    """Mean over tasks j < n-1 of ``matrix[j][j] - matrix[-1][j]`` (success when task j's training ended minus at
    the end of the sequence; positive = forgotten). None for a one-task sequence or an unfinished one."""
    n = len(matrix[0])
    if n < 2 or len(matrix) < n:
        return None
    return sum(matrix[j][j] - matrix[-1][j] for j in range(n - 1)) / (n - 1)


def stage_success(matrix: Sequence[Sequence[float]]) -> list[float]:
    """Success on the task just trained, stage by stage (the diagonal): what plasticity allows on each new task."""
    return [matrix[i][i] for i in range(len(matrix))]
