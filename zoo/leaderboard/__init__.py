"""Run records (one JSON per finished run) and the markdown tables rendered from them."""

from zoo.leaderboard.record import RunRecord, read_records, record_key, results_dir, write_record
from zoo.leaderboard.render import render_index, render_task

__all__ = ["RunRecord", "read_records", "record_key", "render_index", "render_task", "results_dir", "write_record"]
