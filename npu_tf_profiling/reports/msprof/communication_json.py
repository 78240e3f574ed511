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

import numpy as np

from npu_tf_profiling.reports.msprof import comm_names
from npu_tf_profiling.reports.msprof.rank_model import RankModel

TIME_INFO = "Communication Time Info"
BANDWIDTH_INFO = "Communication Bandwidth Info"
TOTAL_OP_INFO = "Total Op Info"


def _time_info(start_us: float, elapse_ms: float) -> str:
    """The "Communication Time Info" object as ``json.dumps`` writes it (a float as its ``repr``)."""
    return (f'{{"Start Timestamp(us)": {start_us!r}, "Elapse Time(ms)": {elapse_ms!r}, "Transit Time(ms)": {elapse_ms!r}, '
            '"Wait Time(ms)": 0.0, "Synchronization Time(ms)": 0.0, "Idle Time(ms)": 0.0, "Wait Time Ratio": 0.0, '
            '"Synchronization Time Ratio": 0.0}')


def _total_info(first_start_us: float, elapse_ms: float) -> str:
    """A step's sums: the ops' keys in their order, the start (the first op's) last."""
    return (f'{{"Elapse Time(ms)": {elapse_ms!r}, "Transit Time(ms)": {elapse_ms!r}, "Wait Time(ms)": 0.0, '
            '"Synchronization Time(ms)": 0.0, "Idle Time(ms)": 0.0, "Wait Time Ratio": 0.0, '
            f'"Synchronization Time Ratio": 0.0, "Start Timestamp(us)": {first_start_us!r}}}')


def _op_text(key: str, info: str) -> str:
    return f'"{key}": {{"{TIME_INFO}": {info}, "{BANDWIDTH_INFO}": {{}}}}'


def communication_json(model: RankModel) -> str:
    """Per step with all-reduces (ascending), its ops in the rows' order, then ``Total Op Info``: the ops' sums
    (elapsed time summed in that order) and the first op's start. Written as text, one op at a time, since a
    rank has thousands of ops: the same bytes as ``json.dumps`` of the nested dicts."""
    ops = model.comm_ops
    if not len(ops):
        return "{}"
    step, model_id, group = (ops[c].to_numpy().astype(np.int64) for c in ("step", "model_id", "group"))
    start = ops["start_us"].to_numpy(dtype="float64")
    elapse = (ops["end_us"].to_numpy(dtype="float64") - start) / 1000.0
    bodies: dict[int, list[str]] = {}
    totals: dict[int, list[float]] = {}  # step -> [sum of elapsed, first start]
    hash_text = comm_names.group_hash(comm_names.WORLD_GROUP)
    for m, s, g, t, e in zip(model_id.tolist(), step.tolist(), group.tolist(), start.tolist(), elapse.tolist()):
        bodies.setdefault(s, []).append(_op_text(f"{comm_names.op_name(m, s, g)}@{hash_text}", _time_info(t, e)))
        total = totals.get(s)
        if total is None:
            totals[s] = [e, t]
        else:
            total[0] += e
            total[1] = min(total[1], t)
    steps = []
    for s in sorted(bodies):
        elapsed, first = totals[s]
        ops_text = ", ".join([*bodies[s], _op_text(TOTAL_OP_INFO, _total_info(first, elapsed))])
        steps.append(f'"{comm_names.step_key(s)}": {{"{comm_names.COLLECTIVE}": {{{ops_text}}}, "{comm_names.P2P}": {{}}}}')
    return "{" + ", ".join(steps) + "}"


def communication_matrix_json(model: RankModel) -> str:
    steps = sorted(set(model.comm_ops["step"].astype(int).tolist()))
    return json.dumps({comm_names.step_key(s): {comm_names.COLLECTIVE: {}, comm_names.P2P: {}} for s in steps})
