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

import numpy as np

from npu_tf_profiling.reports.encoders import text_columns
from npu_tf_profiling.reports.msprof import comm_names
from npu_tf_profiling.reports.msprof.rank_model import RankModel

TIME_INFO = "Communication Time Info"
BANDWIDTH_INFO = "Communication Bandwidth Info"
TOTAL_OP_INFO = "Total Op Info"


_ZEROS = ('"Wait Time(ms)": 0.0, "Synchronization Time(ms)": 0.0, "Idle Time(ms)": 0.0, "Wait Time Ratio": 0.0, '
          '"Synchronization Time Ratio": 0.0')
_NO_BANDWIDTH = f'"{BANDWIDTH_INFO}": {{}}'


def _op_texts(keys: list[str], starts: np.ndarray, elapses: list[float]) -> list[str]:
    """Each op's text: its key, its "Communication Time Info" as ``json.dumps`` writes it (a float as its
    ``repr``, the starts through ``float_reprs``; Transit Time = Elapse Time), the empty bandwidth info.
    One f-string, compiled once: thousands a rank."""
    return [f'"{key}": {{"{TIME_INFO}": {{"Start Timestamp(us)": {start}, "Elapse Time(ms)": {elapse!r}, '
            f'"Transit Time(ms)": {elapse!r}, {_ZEROS}}}, {_NO_BANDWIDTH}}}'
            for key, start, elapse in zip(keys, text_columns.float_reprs(starts), elapses)]


def _total_text(elapse: float, first_start: float) -> str:
    """A step's sums: the ops' keys in their order, the start (the first op's) last."""
    return (f'"{TOTAL_OP_INFO}": {{"{TIME_INFO}": {{"Elapse Time(ms)": {elapse!r}, "Transit Time(ms)": {elapse!r}, '
            f'{_ZEROS}, "Start Timestamp(us)": {first_start!r}}}, {_NO_BANDWIDTH}}}')


def communication_json(model: RankModel) -> str:
    """Per step with all-reduces (ascending), its ops in the rows' order, then ``Total Op Info``: the ops' sums
    (elapsed time summed in that order) and the first op's start. Written as text from columns, since a
    rank has thousands of ops (``cluster --layouts`` writes a folder per rank): the same bytes as
    ``json.dumps`` of the nested dicts (``tests/test_msprof_layout.py`` holds it to them)."""
    ops = model.comm_ops
    if not len(ops):
        return "{}"
    step, model_id, group = (ops[c].to_numpy().astype(np.int64) for c in ("step", "model_id", "group"))
    order = np.argsort(step, kind="stable")  # by step, each step's ops in the rows' order
    step, model_id, group = step[order], model_id[order], group[order]
    start = ops["start_us"].to_numpy(dtype="float64")[order]
    elapse = ((ops["end_us"].to_numpy(dtype="float64")[order] - start) / 1000.0).tolist()
    starts = start.tolist()
    group_key = "@" + comm_names.group_hash(comm_names.WORLD_GROUP)
    keys = [name + group_key for name in comm_names.op_names(model_id.tolist(), step.tolist(), group.tolist())]
    texts = _op_texts(keys, start, elapse)
    steps_here, first = np.unique(step, return_index=True)
    bounds = [*first.tolist(), len(step)]
    out = []
    for s, lo, hi in zip(steps_here.tolist(), bounds, bounds[1:]):
        elapsed = sum(elapse[lo:hi])  # left to right from the first op, as the ops come
        ops_text = ", ".join([*texts[lo:hi], _total_text(elapsed, min(starts[lo:hi]))])
        out.append(f'"{comm_names.step_key(s)}": {{"{comm_names.COLLECTIVE}": {{{ops_text}}}, "{comm_names.P2P}": {{}}}}')
    return "{" + ", ".join(out) + "}"


def communication_matrix_json(model: RankModel) -> str:
    """Each step with all-reduces, with no links: ``json.dumps`` of ``{step<N>: {"collective": {}, "p2p": {}}}``."""
    body = f': {{"{comm_names.COLLECTIVE}": {{}}, "{comm_names.P2P}": {{}}}}'
    steps = np.unique(model.comm_ops["step"].to_numpy().astype(np.int64)).tolist()
    return "{" + ", ".join(f'"{comm_names.step_key(s)}"{body}' for s in steps) + "}"
