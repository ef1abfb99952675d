"""Dataset resolution: the documented order, sha256 verification, clear errors, a writable copy of the mirror."""

import hashlib
import shutil

import pytest

from zoo.data import resolve, sha256_of, writable_copy
from zoo.data.catalog import get_dataset_spec
from zoo.errors import ChecksumError, ConfigError, DatasetNotFoundError


@pytest.fixture()
def clean_env(monkeypatch, tmp_path):
    monkeypatch.delenv("ZOO_DATA_DIR", raising=False)
    monkeypatch.setenv("ZOO_DATA_MIRROR", "")  # set and empty: no mirror, not even the one beside the checkout
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    return monkeypatch


def test_mirror_is_found_and_verified(clean_env, data_mirror):
    clean_env.setenv("ZOO_DATA_MIRROR", str(data_mirror))
    root = resolve("ETT-small", files=["ETTh1.csv"])
    assert root == data_mirror / "ETT-small"
    assert sha256_of(root / "ETTh1.csv") == get_dataset_spec("ETT-small").checksums["ETTh1.csv"]


def test_explicit_path_wins_over_data_dir_and_mirror(clean_env, data_mirror, tmp_path):
    for where in ("explicit", "datadir"):
        (tmp_path / where / "CollegeMsg").mkdir(parents=True)
        shutil.copy(data_mirror / "CollegeMsg" / "CollegeMsg.txt", tmp_path / where / "CollegeMsg")
    clean_env.setenv("ZOO_DATA_MIRROR", str(data_mirror))
    clean_env.setenv("ZOO_DATA_DIR", str(tmp_path / "datadir"))
    assert resolve("CollegeMsg") == tmp_path / "datadir" / "CollegeMsg"
    assert resolve("CollegeMsg", path=tmp_path / "explicit" / "CollegeMsg") == tmp_path / "explicit" / "CollegeMsg"


def test_corrupted_file_is_an_error_never_silent(clean_env, data_mirror, tmp_path):
    target = tmp_path / "d" / "CollegeMsg"
    target.mkdir(parents=True)
    data = (data_mirror / "CollegeMsg" / "CollegeMsg.txt").read_bytes()
    (target / "CollegeMsg.txt").write_bytes(data[:-10] + b"1 2 3\n")
    clean_env.setenv("ZOO_DATA_DIR", str(tmp_path / "d"))
    with pytest.raises(ChecksumError, match="expected e00ba241") as info:
        resolve("CollegeMsg", download=False)
    assert hashlib.sha256((target / "CollegeMsg.txt").read_bytes()).hexdigest() in str(info.value)


def test_missing_dataset_names_every_place_tried_and_the_url(clean_env, tmp_path):
    clean_env.setenv("ZOO_DATA_DIR", str(tmp_path / "nothing"))
    with pytest.raises(DatasetNotFoundError) as info:
        resolve("weather")
    message = str(info.value)
    for needle in (
        "'weather' not found",
        str(tmp_path / "nothing" / "weather"),
        "download cache",
        "no automatic download",
        "Time-Series-Library",
    ):
        assert needle in message


def test_offline_download_failure_is_reported(clean_env, monkeypatch):
    import urllib.request

    def offline(*args, **kwargs):
        raise OSError("network unreachable")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(DatasetNotFoundError, match="download failed: OSError: network unreachable"):
        resolve("CollegeMsg")


def test_unknown_dataset_lists_known_ones():
    with pytest.raises(ConfigError, match="known datasets: .*ETT-small"):
        resolve("no-such-dataset")


def test_writable_copy_links_files_and_keeps_the_mirror_untouched(clean_env, data_mirror):
    clean_env.setenv("ZOO_DATA_MIRROR", str(data_mirror))
    work = writable_copy("TUDataset", files=["MUTAG"])
    raw = work / "MUTAG" / "raw" / "MUTAG_A.txt"
    assert raw.is_symlink() and raw.resolve() == (data_mirror / "TUDataset" / "MUTAG" / "raw" / "MUTAG_A.txt")
    (work / "MUTAG" / "processed").mkdir()  # what PyG does; must land in the cache, not the mirror
    assert not (data_mirror / "TUDataset" / "MUTAG" / "processed").exists()
    assert writable_copy("TUDataset", files=["MUTAG"]) == work  # idempotent


def test_library_and_tests_share_one_mirror_rule(monkeypatch, tmp_path):
    """With no variable set the mirror beside the checkout is used by `resolve` as by the test fixture."""
    from zoo_testing import REPO, mirror

    from zoo.data.resolve import data_mirror

    monkeypatch.delenv("ZOO_DATA_DIR", raising=False)
    monkeypatch.delenv("ZOO_DATA_MIRROR", raising=False)
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    beside = REPO.parent / "shared" / "datasets"
    assert data_mirror() == (beside if beside.is_dir() else None)
    assert mirror() == (beside.resolve() if beside.is_dir() else None)
    if not (beside / "ETT-small" / "ETTh1.csv").is_file():
        pytest.skip(f"no ETT-small in a mirror beside the checkout ({beside})")
    assert resolve("ETT-small", files=["ETTh1.csv"], download=False) == beside / "ETT-small"
    monkeypatch.setenv("ZOO_DATA_MIRROR", str(tmp_path / "elsewhere"))  # an explicit mirror wins, even if empty
    assert data_mirror() == tmp_path / "elsewhere"
    monkeypatch.setenv("ZOO_DATA_MIRROR", "")
    assert data_mirror() is None
