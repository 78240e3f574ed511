# Written for the tests in the style of the vendored npu_convert_dropout.py (Keras 2.6 module paths).
from keras import backend
from keras.utils import control_flow_util
from keras.layers.core import Dropout
from tensorflow.python.ops import array_ops

import npu_ops


def dropout_call(self, inputs, training=None):
    if training is None:
        training = backend.learning_phase()

    def dropped_inputs():
        return npu_ops.dropout(inputs, noise_shape=self._get_noise_shape(inputs), seed=self.seed, keep_prob=1 - self.rate)

    return control_flow_util.smart_cond(training, dropped_inputs, lambda: array_ops.identity(inputs))


Dropout.call = dropout_call
