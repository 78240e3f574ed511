"""`import npu_convert_dropout`, for a script folder that lacks its vendored copy: changes nothing on CPU/GPU.

ModelZoo TF2 folders carry their own `npu_convert_dropout.py` (found first on
`sys.path`); it makes Keras' Dropout call the NPU dropout kernels. Both compute
inverted dropout with the same rate, so this fallback leaves Keras' Dropout as it is.
"""
