"""TensorFlow 1.15's `tensorflow.python.keras.utils.multi_gpu_model`, which TensorFlow 2.4 removed, for `--tf1` scripts.

Scripts import it at the top and call it only with several GPUs; the import
must not stop a one-device run. Called, it says what replaces it (in 1.15 it
also refused fewer than two GPUs).
"""
from __future__ import annotations

from typing import Any


def multi_gpu_model(model: Any, gpus: Any = None, cpu_merge: bool = True, cpu_relocation: bool = False) -> Any:
    raise NotImplementedError("multi_gpu_model was removed in TensorFlow 2.4: build and compile the model inside "
                              "tf.distribute.MirroredStrategy().scope() instead")
