"""`tf.contrib` for `npu-tf-prof run --tf1`: each area TensorFlow 1.15 scripts use, served from a maintained replacement.

`paths.py` resolves a `tensorflow.contrib...` path (attribute chain or
import) to a served module or an error naming what to use; `areas.py` is the
table of areas and their sources (tf-slim, TensorFlow 2's own modules, this
room's modules); the other modules hold the few names TensorFlow 2 dropped that
stock ops rebuild, one module per area: `framework`, `data`, `rnn`,
`training` (HParams), `image`, `util`, `mixed_precision`, `learn` (ModeKeys);
`feeding_queue_runner` serves contrib.training's FeedingQueueRunner from
tensorflow-estimator, which still ships it.
Only user code (bridge/launch/tf1_api.py's import hook) reaches any of this.
"""
