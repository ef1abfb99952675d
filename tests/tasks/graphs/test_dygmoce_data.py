"""DyGMoCE data: the CollegeMsg (DyGLib UCI) loader and DyGLib split, the generic temporal-edge CSV reader and its
errors, DyGFormer's padded neighbour sequences and co-occurrence counts."""

from __future__ import annotations

import numpy as np
import pytest
from zoo_testing import need_dataset

from zoo.errors import ConfigError, DatasetNotFoundError
from zoo_tasks.graphs.dynamic.events import DYGLIB_FEATURE_WIDTH, parse_edges, read_collegemsg
from zoo_tasks.graphs.dynamic.neighbors import NeighborFinder, pair_sequences
from zoo_tasks.graphs.dynamic.split import Interactions, link_prediction_split


def write(tmp_path, text: str, name: str = "edges.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_collegemsg_is_dyglib_uci_and_split_matches_dyglib():
    graph = read_collegemsg(need_dataset("CollegeMsg") / "CollegeMsg.txt")
    assert (graph.num_nodes, graph.num_interactions) == (1899, 59835)
    assert graph.src.min() == 1 and max(graph.src.max(), graph.dst.max()) == 1899  # ml_uci ids, 0 is padding
    assert graph.node_features.shape == (1900, DYGLIB_FEATURE_WIDTH) and not graph.node_features.any()
    assert graph.edge_features.shape == (59836, DYGLIB_FEATURE_WIDTH) and not graph.edge_features.any()
    split = link_prediction_split(graph)
    # DyGLib's get_link_prediction_data on ml_uci: 10 % of 1899 nodes masked (random.seed(2020))
    assert split.sizes() == {"full": 59835, "train": 34352, "val": 8975, "test": 8976, "new_node_val": 5002,
                             "new_node_test": 5932, "masked_new_nodes": 189}  # fmt: skip
    assert not (set(split.train.src) | set(split.train.dst)) & split.new_test_nodes
    assert split.val.ts.min() > split.val_time >= split.train.ts.max()


def test_csv_reindexes_pads_features_and_counts_cleaning(tmp_path):
    path = write(tmp_path, "src,dst,timestamp,f1,f2\n0,5,1.0,0.5,1\n\n5,7,2.0,1,2\n7,0,2.0,3,4\n")
    g = parse_edges(path, feature_width=4)
    assert g.src.tolist() == [1, 2, 3] and g.dst.tolist() == [2, 3, 1]  # sorted raw ids 0,5,7 -> 1,2,3
    assert g.raw_ids.tolist() == [0, 0, 5, 7]
    assert g.edge_ids.tolist() == [1, 2, 3]
    assert g.edge_features.shape == (4, 4) and g.edge_features[1].tolist() == [0.5, 1.0, 0.0, 0.0]
    assert not g.edge_features[0].any()
    assert g.cleaning["blank_lines"] == 1 and g.cleaning["header_lines"] == 1 and g.cleaning["ids_renumbered"]


@pytest.mark.parametrize(
    "text, match",
    [
        ("1,2\n", r"edges.csv:1: expected src,dst,timestamp"),
        ("1,2,3\n1.5,2,4\n", r"edges.csv:2: node ids must be integers"),
        ("1,2,3\n2,3,1\n", r"edges.csv:2: timestamp 1 is earlier than the previous row's"),
        ("1,2,3,0.1\n2,3,4\n", r"edges.csv:2: 0 feature column\(s\), the first row has 1"),
        ("1,2,abc\n", r"edges.csv:1: timestamp and features must be numbers"),
        ("1,2,nan\n", r"edges.csv: 1 value\(s\) are not finite \(first: NaN in column 'timestamp', line 1\)"),
        ("src,dst,ts\n", r"no interactions"),
        ("1,2,3,1,2,3\n", r"3 edge feature columns, more than feature_width=2"),
    ],
)
def test_csv_errors_name_file_and_line(tmp_path, text, match):
    with pytest.raises(ConfigError, match=match):
        parse_edges(write(tmp_path, text), feature_width=2)


def test_missing_file_is_a_dataset_error(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="does not exist"):
        parse_edges(tmp_path / "nope.csv")


def test_sequences_are_recent_neighbours_before_the_time_with_dyglib_counts():
    # node 1 talks to 2, 3, 2, 4 at t = 1..4; query (1, 2) at t = 4 sees neighbours strictly before t
    data = Interactions(np.array([1, 3, 1, 4]), np.array([2, 1, 2, 1]), np.array([1.0, 2.0, 3.0, 4.0]),
                        np.arange(1, 5))  # fmt: skip
    finder = NeighborFinder(data, num_nodes=4)
    a, b = pair_sequences(finder, np.array([1]), np.array([2]), np.array([4.0]), max_length=3, patch_size=2)
    assert a.ids.tolist() == [[1, 3, 2, 0]]  # itself, then the 2 most recent of (2, 3, 2); padded to a patch multiple
    assert a.edge_ids.tolist() == [[0, 2, 3, 0]]
    assert a.dt[0, :3].tolist() == [0.0, 2.0, 1.0]
    assert b.ids.tolist() == [[2, 1, 1, 0]]
    # DyGLib: counts of each entry in the src sequence and in the dst sequence (np.unique), 0 for padding
    assert a.counts[0].tolist() == [[1, 2], [1, 0], [1, 1], [0, 0]]
    assert b.counts[0].tolist() == [[1, 1], [1, 2], [1, 2], [0, 0]]
