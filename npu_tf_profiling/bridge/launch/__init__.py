"""`npu-tf-prof run [--tf1] SCRIPT`: what an unmodified Ascend script needs around it before its first line runs.

The launcher (which also installs the `npu_bridge`/`npu_device` alias of
`bridge/alias.py`), the launch variables Ascend's 1-device scripts expect, a
hint after an uncaught `ModuleNotFoundError`, and the module paths the
script's own code imports but this TensorFlow no longer has: the TensorFlow
1.x API and the 1.15 modules and names TensorFlow 2 dropped (`tf.contrib`
included) for `--tf1`, and TF 2.6-era Keras module paths. Those paths are
served to the script's own modules only: libraries keep the TensorFlow they
were written for.
"""
