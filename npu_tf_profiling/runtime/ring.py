"""The in-graph ring buffer: each training step writes its stamps into a table the session holds.

Why: fetching the stamps on every run made each step pay for a second fetch,
TensorFlow's fetch handling for it, and a NumPy array (tens of µs in Python). Here
the write of one row is a control input of the train op itself, so the user's
`run` goes to TensorFlow exactly as the user wrote it, and the runtime reads the
rows in batches (`drain`, one extra run every few hundred ms; see `recorder`).

A row is ``[seq, step?, stamps..., iteration_end]`` (float64; ``seq`` counts this
session's train op runs from 1, the key is ``seq mod RING_ROWS``). The row without
its end is written first, then the iteration end stamp, then the end alone into a
second (scalar) table: one small kernel between the stamp and the train op. The
tables and the counter are `MutableHashTable` resources, not variables: a table
is created on first use and needs no initializer, so a graph exported from a
profiled run (an Estimator checkpoint's .meta, say) stays runnable without this
package, and the tables never hold more than RING_ROWS rows even when nobody
drains them.

The row is written just before the train op runs, so the iteration end stamp is
taken when everything the train op waits on has finished; the train op's own
kernel (an optimizer's global step increment, or the NoOp that groups the
updates) follows it. The global step is read just before and, when the train op
is the increment, the increment is added, so the row holds the step *after* the
update. Every op here waits on the one before it: the chain runs inline on one
thread, and no op of it is ready when the step starts.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import tensorflow as tf

RING_ROWS = 4096
_INCREMENTS = ("AssignAddVariableOp", "AssignAdd")
_ASSIGNMENTS = ("AssignVariableOp", "Assign")


@dataclass(frozen=True)
class RingOps:
    """The ops one graph's recording uses."""

    write: tf.Operation  # records this run's row (its last op)
    row: tuple[tf.Tensor, tf.Tensor]  # (row without its end, end), fetched on the few runs that need them at once
    slots: tf.Tensor  # fed with the slots to read: a drain reads the rows it expects, not the whole table
    drain: tuple[tf.Tensor, tf.Tensor, tf.Tensor]  # (this session's seq so far, rows [n, width - 1], ends [n]); NaN: not written
    has_step: bool


def build_ring(
    before_end: list[tf.Operation],
    end_stamp: Callable[[list[tf.Operation]], tf.Tensor],
    stamps: list[tf.Tensor],
    step: Callable[[], tf.Tensor | None],
) -> RingOps:
    """Build the counter, the row and its writes, chained after `before_end`.

    `end_stamp(after)` makes the iteration end stamp; `step()` reads the global step
    as float64 (None: the graph has none). The caller runs this inside the probes'
    name scope and device.
    """
    shared = tf.compat.v1.get_default_graph().unique_name("ring")
    with tf.control_dependencies(before_end):  # no op here is a root node: none starts with the step
        counter = _table(shared + "_counter", tf.int64, None, "counter")
        key = tf.constant(0, tf.int64, name="counter_key")
        seq = tf.raw_ops.LookupTableFindV2(table_handle=counter, keys=key, default_value=tf.constant(0, tf.int64)) + 1
    count = tf.raw_ops.LookupTableInsertV2(table_handle=counter, keys=key, values=seq, name="count")
    with tf.control_dependencies([count]):
        slot = tf.math.floormod(seq, RING_ROWS, name="slot")
        head = [tf.cast(seq, tf.float64)]
        step_value = step()
        if step_value is not None:
            head.append(step_value)
        row = tf.stack(head + stamps, name="row")
        rows = _table(shared, tf.float64, row.shape, "rows_writer")
        put_row = tf.raw_ops.LookupTableInsertV2(table_handle=rows, keys=slot, values=row, name="write_row")
        ends = _table(shared + "_ends", tf.float64, None, "ends_writer")
    end = end_stamp([put_row])
    write = tf.raw_ops.LookupTableInsertV2(table_handle=ends, keys=slot, values=end, name="write")
    with tf.control_dependencies(None):  # the reader's handles wait on nothing: a drain runs no step
        slots = tf.compat.v1.placeholder(tf.int64, [None], name="drain_slots")
        nan = tf.constant(float("nan"), tf.float64)
        drain = (
            _find(_table(shared + "_counter", tf.int64, None, "counter_reader"), tf.constant(0, tf.int64), tf.constant(0, tf.int64)),
            _find(_table(shared, tf.float64, row.shape, "rows_reader"), slots, tf.fill(row.shape, nan)),
            _find(_table(shared + "_ends", tf.float64, None, "ends_reader"), slots, nan),
        )
    return RingOps(write=write, row=(row, end), slots=slots, drain=drain, has_step=step_value is not None)


def _table(shared: str, value_dtype: tf.DType, row_shape: tf.TensorShape | None, name: str) -> tf.Tensor:
    """A handle op for the table `shared` (scalar values, or rows of `row_shape`); every handle made
    for one name reaches the same table."""
    if row_shape is None:
        return tf.raw_ops.MutableHashTableV2(
            key_dtype=tf.int64, value_dtype=value_dtype, shared_name=shared, use_node_name_sharing=False, name=name
        )
    return tf.raw_ops.MutableHashTableOfTensorsV2(
        key_dtype=tf.int64, value_dtype=value_dtype, value_shape=row_shape, shared_name=shared, use_node_name_sharing=False, name=name
    )


def _find(table: tf.Tensor, keys: tf.Tensor, default: tf.Tensor) -> tf.Tensor:
    return tf.raw_ops.LookupTableFindV2(table_handle=table, keys=keys, default_value=default)


def global_step_after(graph: tf.Graph, global_step: str, train_op: tf.Operation, gated: bool) -> tf.Tensor:
    """The global step after this iteration's update, as float64, read in the current control context.

    `gated`: the read runs before the train op (the ring write is one of its inputs), so
    when the train op is the increment (a v1 optimizer's ``minimize(global_step=...)``),
    or an assignment, of the global step, its effect is added in the graph.
    """
    op = graph.get_operation_by_name(global_step)
    if op.type == "VarHandleOp":
        value = tf.raw_ops.ReadVariableOp(resource=op.outputs[0], dtype=op.get_attr("dtype"))
    else:
        value = tf.identity(op.outputs[0])
    if gated and train_op.inputs and train_op.inputs[0].op is op:
        if train_op.type in _INCREMENTS:
            value = value + train_op.inputs[1]
        elif train_op.type in _ASSIGNMENTS:
            value = tf.identity(train_op.inputs[1])
    return tf.cast(value, tf.float64)
