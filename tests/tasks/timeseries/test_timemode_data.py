"""TimeMoDE's corpus loader, windows, normalisers, few-shot sets and datamodule (TimeDP protocol), with a user's
own domains: folders or CSVs, wide or long format, for pre-training or as unseen few-shot domains."""

from __future__ import annotations

import numpy as np
import pytest
from zoo_testing import need_dataset

from zoo.errors import ConfigError
from zoo_tasks.timeseries.generation.corpus import (
    AUTO_ID,
    DomainSource,
    folder_source,
    read_csv_series,
    read_domain,
    user_source,
)
from zoo_tasks.timeseries.generation.data import MultiDomainDataModule, balanced_index
from zoo_tasks.timeseries.generation.fewshot import fewshot_set
from zoo_tasks.timeseries.generation.windows import Normalizer, cut_windows, split_windows


def _csv(path, text):
    path.write_text(text)
    return path


def test_cut_windows_stride_equals_length_and_gaps_drop_a_window():
    series = np.arange(10.0)
    series[5] = np.nan
    windows = cut_windows(series, 3)
    assert windows.tolist() == [[0, 1, 2], [6, 7, 8]]  # [3, 4, 5] touches the gap; [9] is too short


def test_split_holds_out_the_last_tenth_of_each_series_in_time():
    a, b = np.arange(200.0), 1000 + np.arange(50.0)
    train, test = split_windows([a, b], 10)
    assert len(train) == 18 + 4 and len(test) == 2 + 1  # max(1, int(0.1 * n)) per series: 20 -> 2, 5 -> 1
    assert test[0, 0] == 180 and test[1, 0] == 190 and test[2, 0] == 1040
    assert train[:, -1].max() < 1040 and not np.isin(test[:, 0], train[:, 0]).any()


def test_centered_pit_matches_the_ecdf_and_inverts_on_the_data():
    values = np.array([3.0, 1.0, 2.0, 2.0, 5.0])
    norm = Normalizer.fit(values, "centered_pit")
    # ECDF(x) = #{v <= x} / n (statsmodels' right-continuous ECDF), then 2u - 1
    assert np.allclose(norm.transform(np.array([0.0, 1.0, 2.0, 4.0, 9.0])), 2 * np.array([0, 1, 3, 4, 5]) / 5 - 1)
    assert np.allclose(norm.inverse(norm.transform(values)), values)
    assert norm.inverse(np.array([-1.0]))[0] == 1.0  # the -inf knot is replaced by the smallest value
    z = Normalizer.fit(values, "zscore")
    assert np.allclose(z.inverse(z.transform(values)), values) and abs(z.transform(values).mean()) < 1e-12


def test_unknown_normalizer_is_refused_by_name():
    with pytest.raises(ConfigError, match="unknown normalize 'minmax'; choose one of centered_pit"):
        Normalizer.fit(np.ones(3), "minmax")


def test_fewshot_follows_timedp_seeded_choice_and_stock_first_value_scaling():
    series = [np.linspace(1.0, 2.0, 400)]
    fs = fewshot_set("stock", series, 24, ks=(3, 10, 100))
    windows = np.stack([series[0][i : i + 24] for i in range(400 - 24 + 1)])
    windows = windows / windows[:, :1]
    np.random.seed(0)
    idx = np.random.choice(len(windows), 2000 + 100)
    assert np.array_equal(fs.test, windows[idx[-2000:]]) and np.allclose(fs.test[:, 0], 1.0)
    assert np.array_equal(fs.prompts[3], fs.prompts[10][:3]) and fs.prompts[100].shape == (100, 24)
    assert np.isclose(fs.scale(fs.test).mean(), 0, atol=1e-9) and np.isclose(fs.scale(fs.test).std(), 1, atol=1e-6)


def test_reader_reindexes_absent_rows_to_gaps_and_skips_code_rows(tmp_path):
    path = _csv(tmp_path / "a.csv", "t,v,w\ncodes,5,x\n2020-01-01 00:00,1,2\n2020-01-01 00:20,3,4\n")
    source = DomainSource("d", ("a.csv",), dataset=None, time_column="t", freq="10min", skip_rows=(1,))
    v, w = read_csv_series(path, source)
    assert np.array_equal(v, [1.0, np.nan, 3.0], equal_nan=True) and np.array_equal(w, [2, np.nan, 4], equal_nan=True)


@pytest.mark.parametrize(
    ("text", "source", "message"),
    [
        ("", {}, "is empty"),
        ("a,b\n", {}, "header but no data rows"),
        ("a,b\n1,x\n", {}, r"non-numeric value 'x' in column 'b', data row 1"),
        ("a,b\n1,2\n", {"columns": ("c",)}, r"has no column 'c'"),
        ("t,b\nnot-a-date,2\n", {"time_column": "t", "freq": "h"}, "unparsable timestamp"),
        ("t,b\n2020-01-01 00:00,2\n2020-01-01 00:00,3\n", {"time_column": "t", "freq": "h"}, "repeated timestamp"),
        ("t,b\n2020-01-01 00:00,2\n2020-01-01 00:30,3\n", {"time_column": "t", "freq": "h"}, "not on the 'h' grid"),
        ("a,b\n1,2\n3,4,5\n", {}, "not a well-formed CSV"),
        ("a,b\n1,2\n2,\n3,inf\n", {}, r"1 value\(s\) are not finite \(first: inf in column 'b', data row 3\)"),
        ("t,b\ncodes,5\n1,2\n2,-inf\n", {"skip_rows": (1,)}, r"first: -inf in column 'b', data row 3\)"),
    ],
)
def test_each_bad_csv_gets_one_clear_error(tmp_path, text, source, message):
    path = _csv(tmp_path / "bad.csv", text)
    with pytest.raises(ConfigError, match=message):
        read_csv_series(path, DomainSource("d", ("bad.csv",), dataset=None, **source))


def test_binary_file_and_missing_folder_and_empty_folder(tmp_path):
    (tmp_path / "x.csv").write_bytes(b"\x00\x01\x02")
    with pytest.raises(ConfigError, match="is a binary file"):
        read_domain(folder_source("mine"), tmp_path)
    with pytest.raises(ConfigError, match="no folder at"):
        read_domain(folder_source("mine"), tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"no file matches '\*.csv'"):
        read_domain(folder_source("mine"), tmp_path / "empty")


def test_balanced_index_gives_every_domain_the_largest_count_and_covers_each():
    index = balanced_index([5, 2, 7], seed=0)
    assert len(index) == 21
    for d, n in enumerate([5, 2, 7]):
        rows = index[index[:, 0] == d, 1]
        assert len(rows) == 7 and set(rows) == set(range(n))


def _user_folder(tmp_path, name, n=300, scale=1.0):
    folder = tmp_path / name
    folder.mkdir()
    t = np.arange(n)
    rows = "\n".join(f"{i},{scale * np.sin(i / 5):.5f},{scale * np.cos(i / 7):.5f}" for i in t)
    (folder / "s.csv").write_text("date,a,b\n" + rows + "\n")
    return str(folder)


def test_datamodule_on_user_domains_batches_normalised_windows_and_cases(tmp_path):
    dm = MultiDomainDataModule(
        domains=[],
        user_domains={"one": _user_folder(tmp_path, "one"), "two": _user_folder(tmp_path, "two", 200, 50.0)},
        unseen=[],
        seq_len=10,
        batch_size=8,
    )
    dm.setup()
    assert [d.name for d in dm.domains] == ["one", "two"] and dm.model_shapes() == {"seq_len": 10}
    one = dm.domains[0]
    assert len(one.train) == 2 * 27 and len(one.heldout) == 2 * 3  # 30 windows per channel, last 3 held out
    assert one.train.min() >= -1 and one.train.max() <= 1  # centered PIT
    x, d = next(iter(dm.train_dataloader()))
    assert x.shape == (8, 10, 1) and set(d.tolist()) <= {0, 1}
    assert len(dm.train_dataloader().dataset) == 2 * (54 - 5)  # balanced: both domains at the larger count
    assert [c.kind for c in dm.cases] == ["indomain", "indomain"]
    val = {int(v) for _, v in dm.val_dataloader().dataset}
    assert val == {0, 1}


def test_datamodule_refuses_unseen_domains_in_pretraining_and_unknown_names():
    with pytest.raises(ConfigError, match=r"unseen \['stock'\] are also pre-training domains"):
        MultiDomainDataModule(domains=["nn5", "stock"], unseen=["stock"])
    with pytest.raises(ConfigError, match="unknown domain 'mars'; built-in domains: fred_md"):
        MultiDomainDataModule(domains=["mars"])
    with pytest.raises(ConfigError, match=r"unseen: unknown domain 'mars'; .* or the path of a folder of CSVs"):
        MultiDomainDataModule(domains=["nn5"], unseen=["mars"])
    with pytest.raises(ConfigError, match=r"user_domains \['web'\] repeat built-in domain names"):
        MultiDomainDataModule(domains=["nn5"], user_domains={"web": "/data/web"}, unseen=[])


@pytest.mark.parametrize("cell", ["inf", "-inf"])
def test_a_user_domain_with_an_infinite_cell_is_refused_naming_file_column_and_row(tmp_path, cell):
    folder = _user_folder(tmp_path, "mine", n=50)
    csv = tmp_path / "mine" / "s.csv"
    lines = csv.read_text().splitlines()
    lines[7] = lines[7].rsplit(",", 1)[0] + f",{cell}"  # data row 7, column b
    lines[3] = lines[3].rsplit(",", 1)[0] + ","  # an empty cell is a gap, not an error
    csv.write_text("\n".join(lines) + "\n")
    dm = MultiDomainDataModule(domains=[], user_domains={"mine": folder}, unseen=[], seq_len=5)
    with pytest.raises(
        ConfigError, match=rf"{csv}: 1 value\(s\) are not finite \(first: {cell} in column 'b', data row 7\)"
    ):
        dm.setup()


def _long_csv(path, ids=("north", "south"), n=120, shuffle=True, time="Date_Time"):
    """Long format (``Sensor,Date_Time,Count``): one row per hour and sensor, rows in a scrambled order; sensor
    ``i``'s count at hour ``t`` is ``1000 * i + t``."""
    rows = [(s, t) for t in range(n) for s in range(len(ids))]
    if shuffle:
        rows = [rows[i] for i in np.random.default_rng(0).permutation(len(rows))]
    stamp = np.datetime64("2024-03-01T00:00")
    lines = [f"Sensor,{time},Count"]
    lines += [
        f"{ids[s]},{(stamp + np.timedelta64(t, 'h')).astype(str).replace('T', ' ')},{1000 * s + t}" for s, t in rows
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_long_format_csv_gives_one_series_per_id_in_time_order(tmp_path):
    path = _long_csv(tmp_path / "counts.csv")
    source, root = user_source("counts", path, time_column="Date_Time", id_column=AUTO_ID)
    north, south = read_csv_series(root / path.name, source)  # ids in order of first appearance in the file
    first = path.read_text().splitlines()[1].split(",")[0]
    if first == "south":
        north, south = south, north
    assert np.array_equal(north, np.arange(120.0)) and np.array_equal(south, 1000 + np.arange(120.0))
    named, _ = user_source("counts", path, time_column="Date_Time", id_column="Sensor")
    assert len(read_csv_series(path, named)) == 2


def test_a_long_format_csv_whose_ids_are_numbers_is_refused_with_how_to_reshape(tmp_path):
    path = _long_csv(tmp_path / "counts.csv", ids=("17", "42"))
    source, _ = user_source("counts", path, time_column="Date_Time", id_column=AUTO_ID)
    with pytest.raises(ConfigError) as info:
        read_csv_series(path, source)
    message = str(info.value)
    assert message.startswith(f"{path}: timestamp '2024-03-0") and "repeats in 'Date_Time'" in message
    assert "name the id column with data.init_args.id_column" in message and "one column per series" in message
    assert "\n" not in message
    named, _ = user_source("counts", path, time_column="Date_Time", id_column="Sensor")
    assert [s[0] for s in read_csv_series(path, named)] in ([0.0, 1000.0], [1000.0, 0.0])


def test_an_unseen_domain_can_be_a_folder_a_csv_a_long_csv_or_a_user_domains_name(tmp_path):
    """Few-shot generation for a new domain: every form of a user's unseen domain gets its few-shot set and its
    cases, and a user domain named unseen leaves pre-training."""
    folder = _user_folder(tmp_path, "shop", n=200)
    wide_csv = tmp_path / "plant.csv"
    wide_csv.write_text("date,power\n" + "\n".join(f"{i},{np.sin(i / 4):.4f}" for i in range(200)) + "\n")
    long_csv = _long_csv(tmp_path / "sensors.csv", time="date")  # data.init_args.date_column names every file's
    dm = MultiDomainDataModule(
        domains=[],
        user_domains={"pre": _user_folder(tmp_path, "pre"), "held": _user_folder(tmp_path, "held", n=100)},
        unseen=[folder, str(wide_csv), str(long_csv), "held"],
        seq_len=10,
        ks=[3],
        batch_size=8,
    )
    dm.setup()
    assert dm.domain_names == ["pre"] and dm.unseen_names == ["shop", "plant", "sensors", "held"]
    assert [(c.kind, c.name, c.k) for c in dm.cases] == [("indomain", "pre", 0)] + [
        ("fewshot", name, 3) for name in ("shop", "plant", "sensors", "held")
    ]
    summary = dm.summary()
    assert all(summary[name] == {"test": 2000, "k3": 3} for name in dm.unseen_names)
    assert set(np.unique(dm.fewshot["sensors"].test // 1000)) == {0, 1}  # windows of both sensors
    with pytest.raises(ConfigError, match=r"would be named 'pre', which is already a domain"):
        MultiDomainDataModule(domains=[], user_domains={"pre": folder}, unseen=[str(tmp_path / "pre")])
    with pytest.raises(ConfigError, match="domain 'nothing': no folder or CSV file at"):
        MultiDomainDataModule(domains=[], user_domains={"pre": folder}, unseen=[str(tmp_path / "nothing")]).setup()


def test_builtin_fred_md_skips_its_transformation_codes_row():
    need_dataset("ts-corpus", files=["fred-md/current.csv"])
    dm_source = read_domain(__import__("zoo_tasks.timeseries.generation.corpus", fromlist=["x"]).DOMAINS["fred_md"])
    assert len(dm_source) == 128 and len(dm_source[0]) == 729  # 1959-01 .. 2019-09
    assert dm_source[0][0] == pytest.approx(2437.296)  # RPI, January 1959 (the row after 'Transform:')


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Sensor,date,Count\na,1,2\na,1,3\nb,1,4\n", r"id 'a' has timestamp '1' twice \(data row 2\)"),
        ("Sensor,date,Count\na,1,2\n,1,3\nb,1,4\n", r"empty id in column 'Sensor', data row 2"),
        ("Sensor,date,Count\na,x,2\nb,x,3\n", r"column 'date' has an unparsable timestamp"),
        ("Sensor,date,Kind,Count\na,1,k,2\nb,1,k,3\n", r"text columns \['Sensor', 'Kind'\] could each be it"),
    ],
)
def test_each_bad_long_format_csv_gets_one_clear_error(tmp_path, text, message):
    path = _csv(tmp_path / "long.csv", text)
    source, _ = user_source("long", path, time_column="date", id_column=AUTO_ID)
    with pytest.raises(ConfigError, match=message) as info:
        read_csv_series(path, source)
    assert str(info.value).startswith(f"{path}: ") and "\n" not in str(info.value)
