"""A task page links its section of the fidelity page (issue 59: "each task's page links its row"), and only when
that page has a section for the task (a plugin's task, absent from the core's fidelity page, gets no dead link)."""

from __future__ import annotations

from zoo.leaderboard.render import fidelity_link


def test_a_task_with_a_fidelity_section_links_it(tmp_path):
    (tmp_path / "fidelity.md").write_text("# Fidelity\n\n## mammoth\n\n| method |\n")
    (line, blank) = fidelity_link("mammoth", tmp_path)
    assert "[fidelity.md#mammoth](fidelity.md#mammoth)" in line and blank == ""


def test_no_section_or_no_page_no_link(tmp_path):
    assert fidelity_link("mammoth", tmp_path) == []
    (tmp_path / "fidelity.md").write_text("# Fidelity\n\n## mammoth_pkg\n")
    assert fidelity_link("mammoth", tmp_path) == []


def test_every_core_task_has_a_fidelity_section():
    from zoo.registry import discover, repository_root

    leaderboard = repository_root() / "leaderboard"
    core = [load.name for load in discover() if load.target.startswith("zoo_tasks.")]
    assert core and all(fidelity_link(task, leaderboard) for task in core), core
