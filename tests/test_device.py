"""Which rank a process profiles as, and how many ranks the job has, from the environment."""
from __future__ import annotations

import json

import pytest

from npu_tf_profiling.runtime.device import device_id, rank_size

CLUSTER = {"chief": ["h0:1"], "worker": ["h1:1", "h2:1"], "ps": ["h3:1"]}


@pytest.mark.parametrize(
    "environ,expected",
    [
        ({}, 0),
        ({"DEVICE_ID": "3", "RANK_ID": "5"}, 3),
        ({"RANK_ID": "5"}, 5),
        ({"TF_CONFIG": json.dumps({"cluster": CLUSTER, "task": {"type": "chief", "index": 0}})}, 0),
        ({"TF_CONFIG": json.dumps({"cluster": CLUSTER, "task": {"type": "worker", "index": 1}})}, 2),
        ({"TF_CONFIG": json.dumps({"cluster": CLUSTER, "task": {"type": "ps", "index": 0}})}, 0),
        ({"TF_CONFIG": "not json"}, 0),
        ({"DEVICE_ID": "x", "RANK_ID": "2"}, 2),
        # Two hosts of an 8-device-per-host job: DEVICE_ID repeats on every host, RANK_ID does not.
        ({"DEVICE_ID": "0", "RANK_ID": "8", "RANK_SIZE": "16"}, 8),
        ({"DEVICE_ID": "3", "RANK_ID": "5", "RANK_SIZE": "1"}, 3),
    ],
)
def test_device_id(environ, expected) -> None:
    assert device_id(environ) == expected


def test_rank_size() -> None:
    assert rank_size({}) is None
    assert rank_size({"RANK_SIZE": "8"}) == 8
    assert rank_size({"TF_CONFIG": json.dumps({"cluster": CLUSTER, "task": {"type": "worker", "index": 0}})}) == 3
