"""`util.set_iteration_per_loop(sess, train_op, n)`: n training iterations per `sess.run`, for real.

On the NPU this sinks a loop of n iterations onto the device, and scripts divide
their step count by n accordingly (`for step in range(0, steps, n)`). Running one
iteration per call here would silently train n times fewer steps, so the
returned op (`IterationOp`, a group of the train op, as upstream) makes
`sess.run` of that session run n iterations: n-1 runs of the train op alone,
then the run the script asked for, whose values (loss, summaries...) are the
last iteration's, as on the NPU. Each is a session run that executes the train
op, so profiling records n step-trace rows per call.

Only `sess.run` loops; a callable made with `make_callable` runs once per call.
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from npu_tf_profiling.runtime import tf_private

_LOOPER_ATTRIBUTE = "_npu_tf_profiling_iteration_loop"


def _check_positive_integer(value: Any, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


class _LoopingRun:
    """Replaces one session's `run`: a fetch containing a registered loop op runs it n times."""

    def __init__(self, session: Any) -> None:
        self._inner_run = session.run
        self._iterations: dict[str, int] = {}
        session.run = self.run
        setattr(session, _LOOPER_ATTRIBUTE, self)

    @classmethod
    def of(cls, session: Any) -> "_LoopingRun":
        existing = getattr(session, _LOOPER_ATTRIBUTE, None)
        return existing if existing is not None else cls(session)

    def register(self, loop_op: tf.Operation, iterations_per_loop: int) -> None:
        self._iterations[loop_op.name] = iterations_per_loop

    def run(self, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None) -> Any:
        loop_name, iterations = self._loop_in(fetches)
        for _ in range(iterations - 1):
            self._inner_run(loop_name, feed_dict, options)
        return self._inner_run(fetches, feed_dict, options, run_metadata)

    def _loop_in(self, fetches: Any) -> tuple[str, int]:
        """The loop op among `fetches` and its n (the most, if several), or ("", 1)."""
        found = ("", 1)
        pending = [fetches]
        while pending:
            fetch = pending.pop()
            if isinstance(fetch, dict):
                pending.extend(fetch.values())
            elif isinstance(fetch, (list, tuple)):
                pending.extend(fetch)
            else:
                name = fetch.name if isinstance(fetch, tf.Operation) else fetch if isinstance(fetch, str) else None
                iterations = self._iterations.get(name) if name is not None else None
                if iterations is not None and iterations > found[1]:
                    found = (name, iterations)
        return found


def _require_operation(train_op: Any) -> None:
    if not isinstance(train_op, tf.Operation):
        raise ValueError(f"The incoming 'train_op' type is '{type(train_op).__name__}', and the need type is 'Operation'")


def _loop_op(train_op: tf.Operation) -> tf.Operation:
    """A NoOp waiting on `train_op` (what `tf.group(train_op)` builds).

    The control input is added to the new op directly: `tf.group` would also
    stamp an attribute on `train_op`, which TensorFlow reports as a no-effect
    mutation once the session has run (scripts call this after initialising).
    """
    with train_op.graph.as_default():
        loop_op = tf.no_op(name="IterationOp")
    tf_private.add_control_input(loop_op, train_op)
    return loop_op


def set_iteration_per_loop(sess: Any, train_op: tf.Operation, iterations_per_loop: int = 1) -> tf.Operation:
    """Upstream's signature: returns `train_op` for n == 1, else an `IterationOp` that `sess.run` runs n times."""
    _require_operation(train_op)
    _check_positive_integer(iterations_per_loop, "iterations_per_loop")
    if iterations_per_loop == 1:
        return train_op
    loop_op = _loop_op(train_op)
    _LoopingRun.of(sess).register(loop_op, iterations_per_loop)
    return loop_op


class IterationPerLoop:
    """Upstream's two-step form: build the loop op first, choose n once a session exists."""

    def __init__(self) -> None:
        self._loop_op: tf.Operation | None = None

    def create_iteration_per_loop_var(self, train_op: tf.Operation) -> tf.Operation:
        _require_operation(train_op)
        self._loop_op = _loop_op(train_op)
        return self._loop_op

    def load_iteration_per_loop_var(self, sess: Any, iterations_per_loop: int = 1) -> None:
        _check_positive_integer(iterations_per_loop, "iterations_per_loop")
        if self._loop_op is None:
            raise RuntimeError("IterationPerLoop: call create_iteration_per_loop_var(train_op) first")
        _LoopingRun.of(sess).register(self._loop_op, iterations_per_loop)
