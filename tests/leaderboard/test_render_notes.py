"""The leaderboard's notes: one bullet per distinct note, naming the rows it covers."""

from zoo.leaderboard.render import grouped_notes
from zoo.registry import BenchmarkRow


def _row(method: str, dataset: str, note: str = "") -> BenchmarkRow:
    return BenchmarkRow(method=method, dataset=dataset, config="x.yaml", note=note)


def test_a_note_shared_by_a_whole_block_of_the_grid_is_one_line():
    rows = tuple(_row(m, d, "1 epoch") for d in ("A/96", "A/192") for m in ("moe", "dense")) + (
        _row("moe", "B/96", "full schedule"),
        _row("dense", "B/96"),
    )
    assert grouped_notes(rows) == ["- all methods on A/96, A/192: 1 epoch", "- moe on B/96: full schedule"]


def test_some_methods_on_some_datasets_are_named_and_scattered_rows_are_listed_pairwise():
    rows = (
        _row("moe", "A", "small"),
        _row("dense", "A", "small"),
        _row("moe", "B", "small"),
        _row("dense", "B", "small"),
        _row("mlp", "A"),
        _row("moe", "C", "odd"),
        _row("mlp", "B", "odd"),
    )
    assert grouped_notes(rows) == ["- moe, dense on A, B: small", "- moe on C, mlp on B: odd"]


def test_every_method_is_all_methods_whatever_order_the_noted_rows_come_in():
    rows = (_row("moe", "A"), _row("dense", "A"), _row("dense", "B", "late"), _row("moe", "B", "late"))
    assert grouped_notes(rows) == ["- all methods on B: late"]


def test_index_line_is_the_first_sentence_or_cut_at_a_word():
    from zoo.leaderboard.render import _summary

    assert _summary("Forward+backward, fp32. Median of 5 runs.") == "Forward+backward, fp32."
    long = "SEER: patch embedding " + "and more words " * 20
    cut = _summary(long, limit=60)
    assert cut.endswith(" …") and len(cut) <= 62 and long.startswith(cut[:-2])
    assert cut[:-2].split()[-1] in long.split()
