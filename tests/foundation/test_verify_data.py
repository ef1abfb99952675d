"""`zoo reproduce --verify` says whether the re-run read the same data files as the record's run (sha256 per file)."""

from zoo.runner.verify import data_comparison


def test_equal_data_is_stated_with_the_file_count():
    hashes = {"a.npy": "1", "b.npy": "2"}
    assert data_comparison(hashes, dict(hashes)) == "data: 2 files, every sha256 equal to the record's"


def test_changed_and_missing_files_are_named():
    line = data_comparison({"a.npy": "1", "b.npy": "2", "c.npy": "3"}, {"a.npy": "1", "b.npy": "X", "d.npy": "4"})
    assert line == (
        "note: 1 of 3 data files differ from the record's (b.npy, ...); 2 read by only one of the two runs (c.npy, ...)"
    )


def test_a_record_without_hashes_and_a_datamodule_without_them():
    assert data_comparison({}, {"a.npy": "1"}).startswith("note: the record holds no data hashes")
    assert data_comparison({"a.npy": "1"}, {}) is None
