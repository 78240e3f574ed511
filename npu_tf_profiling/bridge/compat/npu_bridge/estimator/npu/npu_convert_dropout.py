"""`npu_bridge.estimator.npu.npu_convert_dropout`: importing it changes nothing on CPU/GPU.

Upstream, importing this module makes Keras' Dropout layer call the NPU dropout
kernel. Both compute inverted dropout with the same keep probability, so Keras'
own Dropout is left as it is.
"""
__all__: list = []
