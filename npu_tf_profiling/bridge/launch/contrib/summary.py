"""`tf.contrib.summary`: TensorFlow 1.15's graph-mode summary ops, on TensorFlow 2's summary API.

contrib.summary was the preview of what became `tf.summary` in TensorFlow 2,
and `tf.compat.v1.summary.all_v2_summary_ops` is its `all_summary_ops` under
a new name. The differences kept here are contrib's: a summary's `step`
defaults to the global step (TensorFlow 2's default step is unset in a graph,
which raises), `family` prefixes the tag, and the recording switches are
functions (`always_record_summaries()`), not `record_if`'s argument.
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf

_v1, _v2 = tf.compat.v1, tf.compat.v2

all_summary_ops = _v1.summary.all_v2_summary_ops
create_file_writer = _v2.summary.create_file_writer
create_summary_file_writer = _v2.summary.create_file_writer
flush = _v2.summary.flush
initialize = _v1.summary.initialize
SummaryWriter = _v2.summary.SummaryWriter


def _step(step: Any) -> Any:
    return _v1.train.get_or_create_global_step() if step is None else step


def _tag(name: str, family: str | None) -> str:
    return f"{family}/{name}" if family else name


def scalar(name: str, tensor: Any, family: str | None = None, step: Any = None) -> Any:
    return _v2.summary.scalar(_tag(name, family), tensor, step=_step(step))


def histogram(name: str, tensor: Any, family: str | None = None, step: Any = None) -> Any:
    return _v2.summary.histogram(_tag(name, family), tensor, step=_step(step))


def image(name: str, tensor: Any, bad_color: Any = None, max_images: int = 3, family: str | None = None,
          step: Any = None) -> Any:
    del bad_color  # TensorFlow 2's image summary has no bad-colour fill
    return _v2.summary.image(_tag(name, family), tensor, step=_step(step), max_outputs=max_images)


def audio(name: str, tensor: Any, sample_rate: Any, max_outputs: int, family: str | None = None,
          step: Any = None) -> Any:
    return _v2.summary.audio(_tag(name, family), tensor, sample_rate, step=_step(step), max_outputs=max_outputs)


def always_record_summaries() -> Any:
    return _v2.summary.record_if(True)


def never_record_summaries() -> Any:
    return _v2.summary.record_if(False)


def record_summaries_every_n_global_steps(n: int, global_step: Any = None) -> Any:
    """Record when the global step is a multiple of `n` (contrib's condition)."""
    step = _step(global_step)
    return _v2.summary.record_if(lambda: tf.math.equal(step % n, 0))


__all__ = ["all_summary_ops", "create_file_writer", "create_summary_file_writer", "flush", "initialize",
           "SummaryWriter", "scalar", "histogram", "image", "audio", "always_record_summaries",
           "never_record_summaries", "record_summaries_every_n_global_steps"]
