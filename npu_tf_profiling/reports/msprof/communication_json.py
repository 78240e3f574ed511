"""``communication.json`` and ``communication_matrix.json``: the all-reduces of one rank, by step.

Both files map ``step<N>`` (the iterations that have all-reduces) to
``{"collective": {...}, "p2p": {}}``, keyed by ``<op name>@<group hash>``
(``comm_names``), as torch_npu writes them; each step's collectives end with
``Total Op Info``, their sums (msprof-analyze's ``compare`` needs it).

``communication.json``, per all-reduce group of an iteration, "Communication
Time Info": ``Start Timestamp(us)`` = Reduce Start, ``Elapse Time(ms)`` = the
group's duration (Reduce Start -> Reduce End). We time the all-reduce as a
whole: the time a rank waits for slower ranks is inside it, and we cannot tell
it from the transfer on one rank alone, so ``Transit Time(ms)`` = the whole
duration and ``Wait``/``Synchronization``/``Idle Time(ms)`` are 0 (msprof-analyze's
``cluster_time_summary`` splits waiting from transfer across ranks: its wait
stage is a rank's duration minus the fastest rank's). "Communication Bandwidth
Info" is empty: we do not see how many bytes went over which link.

``communication_matrix.json`` has the same steps with no links, for the same
reason (an empty matrix is read as "no link data", never as zero bandwidth).
"""
from __future__ import annotations

import json
from typing import Any

from npu_tf_profiling.reports.msprof import comm_names
from npu_tf_profiling.reports.msprof.rank_model import RankModel

TIME_INFO = "Communication Time Info"
BANDWIDTH_INFO = "Communication Bandwidth Info"
TOTAL_OP_INFO = "Total Op Info"


def op_key(model_id: int, step: int, group: int) -> str:
    return f"{comm_names.op_name(model_id, step, group)}@{comm_names.group_hash(comm_names.WORLD_GROUP)}"


def _time_info(start_us: float, end_us: float) -> dict[str, float]:
    elapse_ms = (end_us - start_us) / 1000.0
    return {
        "Start Timestamp(us)": start_us,
        "Elapse Time(ms)": elapse_ms,
        "Transit Time(ms)": elapse_ms,
        "Wait Time(ms)": 0.0,
        "Synchronization Time(ms)": 0.0,
        "Idle Time(ms)": 0.0,
        "Wait Time Ratio": 0.0,
        "Synchronization Time Ratio": 0.0,
    }


def _comm_steps(model: RankModel) -> dict[str, dict[str, Any]]:
    """``step<N>`` -> empty collective/p2p groups, for the iterations that have all-reduces (torch_npu lists only those)."""
    steps = sorted(set(model.comm_ops["step"].astype(int).tolist()))
    return {comm_names.step_key(s): {comm_names.COLLECTIVE: {}, comm_names.P2P: {}} for s in steps}


def _total(ops: list[dict[str, float]]) -> dict[str, float]:
    """A step's ``Total Op Info`` time: the sums over its ops (start: the first op's)."""
    total = {key: sum(op[key] for op in ops) for key in ops[0] if key != "Start Timestamp(us)"}
    total["Start Timestamp(us)"] = min(op["Start Timestamp(us)"] for op in ops)
    return total


def communication(model: RankModel) -> dict[str, dict[str, Any]]:
    out = _comm_steps(model)
    for op in model.comm_ops.itertuples(index=False):
        step = out[comm_names.step_key(int(op.step))][comm_names.COLLECTIVE]
        step[op_key(int(op.model_id), int(op.step), int(op.group))] = {
            TIME_INFO: _time_info(float(op.start_us), float(op.end_us)),
            BANDWIDTH_INFO: {},
        }
    for groups in out.values():
        ops = [info[TIME_INFO] for info in groups[comm_names.COLLECTIVE].values()]
        groups[comm_names.COLLECTIVE][TOTAL_OP_INFO] = {TIME_INFO: _total(ops), BANDWIDTH_INFO: {}}
    return out


def communication_json(model: RankModel) -> str:
    return json.dumps(communication(model))


def communication_matrix_json(model: RankModel) -> str:
    return json.dumps(_comm_steps(model))
