"""Which `tf.contrib` areas `--tf1` serves, from what, and what to use for the rest.

The table follows what ModelZoo-TensorFlow's TF1 scripts use (of 472 npu_bridge
model folders, 355 use tf.contrib: layers 220, slim 136, data 98, framework 66,
tpu 51, training 43, rnn 38, cluster_resolver 37, image 33, opt 30). An area is
served only from a maintained replacement with TensorFlow 1.15's meaning:

- tf-slim (an optional dependency, `npu_tf_profiling[tf1]`) is contrib.slim,
  contrib.layers and contrib.framework's arg_scope/variables, moved out of
  TensorFlow by its authors with contrib's layout, argument orders and
  defaults (its losses and metrics are contrib.losses/contrib.metrics, whose
  argument orders differ from tf.losses/tf.metrics);
- TensorFlow 2's own modules where contrib's names moved there unchanged
  (contrib.data -> tf.data.experimental, contrib.rnn -> tf.nn.rnn_cell, ...);
- this package's modules (`bridge/launch/contrib/*.py`) for the few names TensorFlow 2
  dropped that stock ops rebuild (HParams, image.rotate, LSTMBlockCell, ...),
  or that another TensorFlow package still ships (FeedingQueueRunner, from
  tensorflow-estimator, imported when used).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, ClassVar

_FUTURE_FLAGS = frozenset(("absolute_import", "division", "print_function", "unicode_literals", "annotations"))
SLIM_INSTALL = "pip install 'npu_tf_profiling[tf1]' (or: pip install tf-slim==1.1.0)"
_OURS = "npu_tf_profiling.bridge.launch.contrib."
_V1 = "tensorflow._api.v2.compat.v1."


def slim_hint(area: str) -> str:
    return f"tf.contrib.{area} is served from the tf-slim package, which is not installed: {SLIM_INSTALL}"


@dataclass(frozen=True)
class Area:
    """One served `tf.contrib.X`: the modules whose names it re-exports (first wins) and where its sub-modules are.

    `deep` is the module that `tensorflow.contrib.X.<rest>` sub-module paths
    map into (`<deep>.<rest>`); `replacement` is named in the error for a name
    this area does not have.
    """

    sources: tuple[str, ...] = ()
    deep: str = ""
    needs_slim: bool = False
    replacement: str = ""
    _loaded: list[ModuleType] = field(default_factory=list, compare=False, repr=False)

    MISSING: ClassVar[object] = object()

    def check(self, path: str = "") -> None:
        """Raise ModuleNotFoundError saying how to install tf-slim, if this area needs it and it is missing."""
        if self.needs_slim:
            try:
                importlib.import_module("tf_slim")
            except ModuleNotFoundError:
                raise ModuleNotFoundError(slim_hint(path.split(".")[2] if path.count(".") >= 2 else "slim"),
                                          name="tf_slim") from None
            from npu_tf_profiling.bridge.launch.contrib.slim_fit import fit_tf_slim

            fit_tf_slim()

    def modules(self) -> list[ModuleType]:
        if not self._loaded and self.sources:
            for source in self.sources:
                try:
                    self._loaded.append(importlib.import_module(source))
                except ModuleNotFoundError as exc:  # an optional source (tf_slim for contrib.training's loops)
                    if exc.name != "tf_slim":
                        raise
        return self._loaded

    def lookup(self, name: str) -> Any:
        for module in self.modules():
            if name in vars(module) or hasattr(module, name):
                return getattr(module, name)
        return self.MISSING

    def names(self) -> set[str]:
        return {name for module in self.modules() for name in dir(module) if not name.startswith("_")}

    def star_names(self) -> list[str]:
        """What `from tensorflow.contrib.X import *` binds: the served names, less modules and `__future__` flags.

        A star import reads `__all__` and never `__getattr__`, so without this list it binds nothing
        (TensorFlow 1.15's contrib modules exported their documented names the same way).
        """
        public = set()
        for module in self.modules():
            for name in dir(module):
                if name.startswith("_") or name in _FUTURE_FLAGS:
                    continue
                if not isinstance(getattr(module, name, None), ModuleType):
                    public.add(name)
        return sorted(public)


_SLIM = Area(("tf_slim",), deep="tf_slim", needs_slim=True, replacement="tf_slim")
_LAYERS = Area(("tf_slim.layers",), deep="tf_slim.layers", needs_slim=True,  # layers, initializers, regularizers...
               replacement="tf_slim.layers, or tf.compat.v1.layers / tf.keras.layers (feature columns: tf.feature_column)")
_FRAMEWORK = Area((_OURS + "framework", "tf_slim.ops.variables"), deep="tf_slim.ops", needs_slim=True,
                  replacement="tf_slim (arg_scope, variables), tf.nest, tf.train.list_variables/load_checkpoint")
_TPU_NAMES = "InputPipelineConfig, RunConfig, TPUConfig, TPUEstimatorSpec, TPUEstimator"
# tf.compat.v1.estimator.tpu's names; contrib.tpu.python.tpu's modules are TensorFlow's tensorflow.python.tpu
# (tpu_function, async_checkpoint, and tpu_config / tpu_estimator, which re-export the estimator's).
_TPU = Area(("tensorflow_estimator._api.v1.estimator.tpu",), deep="tensorflow.python.tpu",
            replacement=(f"tf.compat.v1.estimator.tpu ({_TPU_NAMES}: served, and with use_tpu off they run on CPU/GPU); "
                         "the rest is TPU-only: tf.estimator.Estimator with NPURunConfig (keep the script's use_tpu flag off)"))
_TRAINING = Area((_OURS + "training", _OURS + "feeding_queue_runner", "tf_slim.training.evaluation",
                  "tf_slim.training.training"), deep="tf_slim.training",
                 replacement=f"tf.train / tf.estimator; the training loops are tf_slim.training ({SLIM_INSTALL})")

AREAS: dict[str, Area] = {
    "tensorflow.contrib.slim": _SLIM,
    "tensorflow.contrib.slim.python.slim": _SLIM,
    "tensorflow.contrib.layers": _LAYERS,
    "tensorflow.contrib.layers.python.layers": _LAYERS,
    "tensorflow.contrib.framework": _FRAMEWORK,
    "tensorflow.contrib.framework.python.ops": _FRAMEWORK,
    "tensorflow.contrib.training": _TRAINING,
    "tensorflow.contrib.training.python.training": _TRAINING,
    "tensorflow.contrib.losses": Area(("tf_slim.losses",), deep="tf_slim.losses", needs_slim=True,
                                      replacement="tf_slim.losses (contrib's argument order: logits first)"),
    "tensorflow.contrib.metrics": Area(("tf_slim.metrics",), deep="tf_slim.metrics", needs_slim=True,
                                       replacement="tf_slim.metrics or tf.compat.v1.metrics"),
    "tensorflow.contrib.data": Area((_OURS + "data", _V1 + "data.experimental"),
                                    replacement="tf.data.experimental or tf.data.Dataset methods"),
    "tensorflow.contrib.rnn": Area((_OURS + "rnn",),
                                   replacement="tf.nn.rnn_cell (LSTMCell, GRUCell, MultiRNNCell, DropoutWrapper) "
                                               "or tf.keras.layers.LSTM/GRU"),
    "tensorflow.contrib.image": Area((_OURS + "image",),
                                     replacement="tf.image, or tf.raw_ops.ImageProjectiveTransformV3 for other warps"),
    "tensorflow.contrib.cluster_resolver": Area((_V1 + "distribute.cluster_resolver",),
                                                replacement="tf.distribute.cluster_resolver"),
    "tensorflow.contrib.distribute": Area((_V1 + "distribute",), replacement="tf.distribute"),
    "tensorflow.contrib.tpu": _TPU,
    "tensorflow.contrib.tpu.python.tpu": _TPU,
    "tensorflow.contrib.summary": Area((_OURS + "summary",), replacement=(
        "tf.compat.v2.summary (create_file_writer, scalar, record_if) or tf.compat.v1.summary")),
    "tensorflow.contrib.util": Area((_OURS + "util",), replacement="tf.get_static_value, tf.make_tensor_proto"),
    "tensorflow.contrib.mixed_precision": Area((_OURS + "mixed_precision",), replacement=(
        "NPULossScaleOptimizer with a FixedLossScaleManager / ExponentialUpdateLossScaleManager (npu_bridge)")),
    "tensorflow.contrib.learn": Area((_OURS + "learn",),
                                     replacement="tf.estimator (ModeKeys, RunConfig, Estimator) and tf.data"),
    # Ascend's adapter before it was npu_bridge: tensorflow.contrib.offline_train.python.npu.npu_config ...
    "tensorflow.contrib.offline_train.python": Area(deep="npu_bridge.estimator", replacement="npu_bridge.estimator"),
    "tensorflow.contrib.hccl.python.ops": Area(deep="npu_bridge.hccl", replacement="npu_bridge.hccl.hccl_ops"),
}

# One-off module paths (their area has no `deep` home for them).
MODULE_ALIASES: dict[str, str] = {
    "tensorflow.contrib.framework.python.ops.audio_ops": "tensorflow.python.ops.gen_audio_ops",
    "tensorflow.contrib.image.python.ops.image_ops": _OURS + "image",
    "tensorflow.contrib.image.ops.gen_image_ops": "tensorflow.python.ops.gen_image_ops",  # the same kernels
    "tensorflow.contrib.learn.datasets.mnist": "npu_tf_profiling.bridge.launch.mnist_input_data",
    "tensorflow.contrib.learn.python.learn.datasets.mnist": "npu_tf_profiling.bridge.launch.mnist_input_data",
    "tensorflow.contrib.mixed_precision.python.loss_scale_manager": _OURS + "mixed_precision",
    "tensorflow.contrib.training.python.training.feeding_queue_runner": _OURS + "feeding_queue_runner",
    "tensorflow.contrib.mixed_precision.python.loss_scale_optimizer": _OURS + "mixed_precision",
}

# Areas with no replacement here -> what to use (named in the error when one of their names is used).
REMOVED: dict[str, str] = {
    "cudnn_rnn": "tf.keras.layers.LSTM / tf.keras.layers.GRU (they use cuDNN on GPU)",
    "seq2seq": "tensorflow_addons.seq2seq",
    "legacy_seq2seq": "tensorflow_addons.seq2seq or tf.keras.layers.RNN",
    "crf": "tensorflow_addons.text.crf_log_likelihood / crf_decode",
    "opt": "tf.compat.v1.train optimizers or tf.keras.optimizers (LazyAdam, AdamW, LARS: tensorflow_addons.optimizers)",
    "quantize": "the tensorflow_model_optimization package",
    "keras": "tf.keras",
    "predictor": "tf.saved_model.load / tf.compat.v1.saved_model.loader",
    "compiler": "tf.function(jit_compile=True) (XLA)",
    "tfprof": "tf.compat.v1.profiler",
    "lookup": "tf.lookup (StaticHashTable, KeyValueTensorInitializer)",
    "staging": "tf.data prefetching (Dataset.prefetch)",
    "distributions": "the tensorflow_probability package",
    "sparsemax": "tensorflow_addons.activations.sparsemax",
    "nn": "tf.nn",
    "cloud": "tf.io / tf.data for the data; Bigtable: the google-cloud-bigtable client",
    "recurrent": "tf.keras.layers.RNN",
    "model_pruning": "the tensorflow_model_optimization package",
    "all_reduce": "tf.distribute collectives (or npu_bridge's hccl_ops.allreduce)",
    "saved_model": "tf.saved_model",
}
