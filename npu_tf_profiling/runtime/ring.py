"""The in-graph ring buffer: each training step writes its stamps into a table the session holds.

Why: fetching the stamps on every run made each step pay for a second fetch,
TensorFlow's fetch handling for it, and a NumPy array (tens of µs in Python). Here
the write of one row is a control input of the train op itself, so the user's
`run` goes to TensorFlow exactly as the user wrote it, and the runtime reads the
rows in batches (one extra `run` every few hundred ms; see `recorder`).

A row is ``[key, step?, stamps..., iteration_end]`` (float64), written by one
insert at ``key mod RING_ROWS``, so a row is either absent or whole. The key is
one of two numbers:

* **the global step after the update** (``keyed_by_step``), when the train op is
  the global step's increment by one (a v1 optimizer's ``minimize(global_step=...)``,
  what Estimator and most TF1 scripts run). Every run of the train op then has its
  own step, so no counter is needed, and the row holds no separate step column;
* **a counter** of this session's train op runs (from 1) otherwise: read, add one,
  write back; the row then also holds the step (when the graph has one). Where
  TensorFlow may run calls of one function at once (a step traced in a loop's
  body: a ``tf.range`` loop of steps, Keras 3's ``steps_per_execution`` loop),
  two calls could read one count and write one row over the other, so there the three are done under a mutex (``MutexV2``,
  made on first use like the tables). Only there: the lock is an asynchronous
  kernel: built into every probed function, the tiny benchmark model cost
  +80 µs a step, against +20-30 µs without it (benchmarks/history/2026-12-02-tf2-first-overhead-runs.md), and its first run in a loop is slow
  enough to let the loop's next calls count first (Keras 2's
  ``steps_per_execution`` body, locked, numbered its first call's steps 3, 1, 2). (Taking the count once the step has its
  batch instead was tried: overlapping calls are then numbered in batch order,
  but the reports order rows by Iteration End, so overlapping rows lost their
  Data Aug Bound; reverted.)

Where other sessions may write the same global step (a session on a server's
target, ``grpc://...``, where workers share variables: a parameter server's
global step), a run's key cannot be told from the step it read, so the counter
keys the rows there (``StepKey.shared``).

The tables and the counter are `MutableHashTable` resources, not variables: a
table is created on first use and needs no initializer, so a graph exported from
a profiled run (an Estimator checkpoint's .meta, say) stays runnable without this
package, and the tables never hold more than RING_ROWS rows even when nobody
drains them. Their shared name is unique to the graph that built them: sessions on
one server share every resource of a name, and two profiled graphs there must not
read each other's rows. Table kernels are the costly part of the row (each looks its table up
by name, and a handle op builds its handle every run: about 2-4 µs each here,
against well under 1 µs for a `Timestamp`), which is why the step key, which needs
no counter, is used wherever it is exact.

The row is written just before the train op runs. The iteration end stamp comes
first, when everything the train op waits on has finished, so the row's own ops
(a few µs) are not counted in the model's iteration; then the row is made and
written, and the train op's own kernel (an optimizer's global step increment, or
the NoOp that groups the updates) follows. When the train op is the increment
(or an assignment) of the global step, its effect is added to the value read, so
the row holds the step *after* the update.

Only the end stamp, the row's pack and its insert are on the step's tail. Where
the row is keyed by the step, what the key needs (the step, read before this
run's increment, the slot, and the table's handle) is made at the *start* of the
step instead, as a chain hanging off the step variable, while the executor mostly
waits for the input pipeline: on the tiny benchmark model, measured ad hoc in one
process with both forms, the cost per step went from +20..+31 µs to +16..+22 µs
(benchmarks/RESULTS.md). The counter's
read-add-write stays on the tail: done early, a run that then fails (the end of
the data) would take a run number and write no row, which would read as a lost
iteration.

Every op of a chain waits on the one before it (`_Chain`): each is then the only
op its predecessor makes ready, so TensorFlow's executor runs the whole chain
inline on one thread, even in a session's first ~100 runs, when it still treats
every kernel as expensive and hands an op that becomes ready next to another
one to its thread pool.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Callable

import tensorflow as tf

RING_ROWS = 4096
_INCREMENTS = ("AssignAddVariableOp", "AssignAdd")
_ASSIGNMENTS = ("AssignVariableOp", "Assign")


@dataclass(frozen=True)
class RingOps:
    """The ops one graph's recording uses.

    The reader's ops (``slots``, ``rows``, ``progress``) are None in a tf.function's
    graph: a function takes no feeds, so its rows are read eagerly, by the tables'
    names (``tables``, ``row_width``: see ``rows_table_name``).
    """

    write: tf.Operation  # records this run's row (its last op)
    row: tf.Tensor  # this run's row, fetched on the few runs that need it at once
    slots: tf.Tensor | None  # fed with the slots to read: a drain reads the rows it expects, not the whole table
    rows: tf.Tensor | None  # the rows at `slots`, [n, width]; a slot never written reads as NaN
    progress: tf.Tensor | None  # int64: the last key written (keyed_by_step: the global step now; else the counter)
    has_step: bool  # the row carries the global step (as its key when keyed_by_step)
    keyed_by_step: bool
    tables: str = ""  # the shared name the tables' names start with
    row_width: int = 0


def rows_table_name(tables: str, row_width: int) -> str:
    """The rows table of one row width: graphs sharing a counter (traces of one function) may differ in width."""
    return f"{tables}_rows{row_width}"


def counter_table_name(tables: str) -> str:
    return f"{tables}_counter"


@dataclass(frozen=True)
class StepKey:
    """The graph's global step and the train op, whose relation decides the row's key."""

    name: str
    train_op: tf.Operation
    gated: bool  # the row is written before the train op (else: after it, fetched alongside)
    shared: bool = False  # other sessions may write it too (a server's target): it cannot key the rows


class _Chain:
    """Ops made one after another, each waiting on the one before (see the module docstring)."""

    def __init__(self, after: list[tf.Operation]) -> None:
        self._last = after

    def add(self, make: Callable[[], tf.Tensor | tf.Operation]) -> Any:
        with tf.control_dependencies(self._last):
            made = make()
        self._last = [made if isinstance(made, tf.Operation) else made.op]
        return made

    @property
    def last(self) -> list[tf.Operation]:
        return self._last


def build_ring(
    before_end: list[tf.Operation],
    end_stamp: Callable[[list[tf.Operation]], tf.Tensor],
    stamps: list[tf.Tensor],
    global_step: StepKey | None,
    tables: str | None = None,
    count_lock: bool = False,
) -> RingOps:
    """Build the row and its write, chained after `before_end`.

    `end_stamp(after)` makes the iteration end stamp. The caller runs this inside the
    probes' name scope and device. `tables`: the tables' shared name, given for a
    tf.function (every trace of one function counts on one counter, and no reader
    ops are built in it); by default one unique to this graph. `count_lock`: take the
    counter under a mutex (a function whose calls may run at once; see the module docstring).
    """
    graph = tf.compat.v1.get_default_graph()
    in_function = tables is not None
    shared = tables if in_function else f"{graph.unique_name('ring')}_{uuid.uuid4().hex}"  # see the module docstring
    keyed_by_step = _is_unit_increment(graph, global_step)
    carries_step = global_step is not None and not keyed_by_step  # the row holds the step next to its counter key
    row_shape = tf.TensorShape([int(carries_step) + len(stamps) + 2])
    rows_name = rows_table_name(shared, row_shape[0])
    if keyed_by_step:
        with tf.control_dependencies(None):  # the start of the step: it waits on the step variable alone
            early = _Chain([])
            step = early.add(lambda: _read_step(graph, global_step.name))
            one = early.add(lambda: tf.constant(1, tf.int64, name="one"))  # the train op's increment (checked)
            key = early.add(lambda: tf.add(step, one, name="step_after"))
            slot, key_value, table = _slot_key_table(early, key, rows_name, row_shape)
        end = end_stamp(before_end)
        chain = _Chain([end.op])
        head: list[tf.Tensor] = []
        progress_of = lambda: _read_step(graph, global_step.name)  # noqa: E731 - the reader's own read
    else:
        end = end_stamp(before_end)  # first: the row's own ops are not the model's iteration
        chain = _Chain([end.op])  # no op here is a root node: none starts with the step
        zero = chain.add(lambda: tf.constant(0, tf.int64, name="counter_key"))
        counter = chain.add(lambda: _table(counter_table_name(shared), tf.int64, None, "counter"))
        if count_lock:  # calls of one function may run at once (a tf.range loop of steps): one count at a time
            mutex = chain.add(lambda: tf.raw_ops.MutexV2(shared_name=f"{counter_table_name(shared)}_lock", name="counter_mutex"))
            lock = chain.add(lambda: tf.raw_ops.MutexLock(mutex=mutex, name="counter_lock"))
        done = chain.add(lambda: tf.raw_ops.LookupTableFindV2(table_handle=counter, keys=zero, default_value=zero))
        one = chain.add(lambda: tf.constant(1, tf.int64, name="one"))
        key = chain.add(lambda: tf.add(done, one, name="seq"))
        chain.add(lambda: tf.raw_ops.LookupTableInsertV2(table_handle=counter, keys=zero, values=key, name="count"))
        if count_lock:  # the lock is held until its tensor's last consumer ran: this one
            chain.add(lambda: tf.raw_ops.ConsumeMutexLock(mutex_lock=lock, name="counter_unlock"))
        head = [_step_after(graph, global_step, chain)] if carries_step else []
        progress_of = lambda: _find(  # noqa: E731
            _table(counter_table_name(shared), tf.int64, None, "counter_reader"), tf.constant(0, tf.int64), tf.constant(0, tf.int64)
        )
        slot, key_value, table = _slot_key_table(chain, key, rows_name, row_shape)
    row = chain.add(lambda: tf.stack([key_value] + head + stamps + [end], name="row"))
    write = tf.raw_ops.LookupTableInsertV2(table_handle=table, keys=slot, values=row, name="write")
    slots = rows = progress = None
    if not in_function:
        with tf.control_dependencies(None):  # the reader's handles wait on nothing: a drain runs no step
            slots = tf.compat.v1.placeholder(tf.int64, [None], name="drain_slots")
            nan = tf.fill(row.shape, tf.constant(float("nan"), tf.float64))
            rows = _find(_table(rows_name, tf.float64, row.shape, "rows_reader"), slots, nan)
            progress = progress_of()
    return RingOps(
        write=write, row=row, slots=slots, rows=rows, progress=progress,
        has_step=global_step is not None, keyed_by_step=keyed_by_step, tables=shared, row_width=int(row_shape[0]),
    )


def _slot_key_table(chain: _Chain, key: tf.Tensor, rows_name: str, row_shape: tf.TensorShape) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """The row's slot (``key mod RING_ROWS``), the key as the row's first value, and the rows table's handle."""
    rows_in_ring = chain.add(lambda: tf.constant(RING_ROWS, tf.int64, name="ring_rows"))
    slot = chain.add(lambda: tf.math.floormod(key, rows_in_ring, name="slot"))
    key_value = chain.add(lambda: tf.cast(key, tf.float64, name="key"))
    table = chain.add(lambda: _table(rows_name, tf.float64, row_shape, "rows_writer"))
    return slot, key_value, table


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


def _read_step(graph: tf.Graph, global_step: str) -> tf.Tensor:
    """The global step's current value, as int64."""
    op = graph.get_operation_by_name(global_step)
    if op.type == "VarHandleOp":
        value = tf.raw_ops.ReadVariableOp(resource=op.outputs[0], dtype=op.get_attr("dtype"))
    else:
        value = tf.identity(op.outputs[0])
    return value if value.dtype == tf.int64 else tf.cast(value, tf.int64)


def _is_unit_increment(graph: tf.Graph, global_step: StepKey | None) -> bool:
    """Whether the row can be keyed by the step: the train op is the global step's increment by
    the constant one, the row is written before it, and no other session writes the step."""
    if global_step is None or not global_step.gated or global_step.shared:
        return False
    train_op = global_step.train_op
    if train_op.type not in _INCREMENTS or len(train_op.inputs) < 2:
        return False
    if train_op.inputs[0].op is not graph.get_operation_by_name(global_step.name):
        return False
    increment = train_op.inputs[1]
    return increment.op.type == "Const" and tf.get_static_value(increment) == 1


def _step_after(graph: tf.Graph, global_step: StepKey, chain: _Chain) -> tf.Tensor:
    """The global step after this iteration's update, as float64, read as the chain's next ops.

    `gated`: the read runs before the train op (the ring write is one of its inputs), so
    when the train op is the increment (a v1 optimizer's ``minimize(global_step=...)``),
    or an assignment, of the global step, its effect is added in the graph.
    """
    value = chain.add(lambda: _read_step(graph, global_step.name))
    train_op = global_step.train_op
    if global_step.gated and train_op.inputs and train_op.inputs[0].op is graph.get_operation_by_name(global_step.name):
        effect = train_op.inputs[1]
        effect = effect if effect.dtype == tf.int64 else tf.cast(effect, tf.int64)
        if train_op.type in _INCREMENTS:
            value = chain.add(lambda: value + effect)
        elif train_op.type in _ASSIGNMENTS:
            value = chain.add(lambda: tf.identity(effect))
    return chain.add(lambda: tf.cast(value, tf.float64))
