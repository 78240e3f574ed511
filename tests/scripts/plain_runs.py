"""Plain (unprofiled) runs of several styles of a test training script in one process, for the bit-identity checks.

Usage: plain_runs.py SCRIPT STEPS STYLE...   (SCRIPT: tests/scripts/tf2_train.py, tf2_gan.py: `SCRIPT STYLE STEPS`)

Starting TensorFlow is most of a short run's cost, and a plain run needs no fresh
process of its own (no start-up hook to test), so the styles share one: each is
the script run again (runpy) after clear_session, and the script's own
set_random_seed resets every seed. tf2_train.py's "mirrored" gives TensorFlow two
logical CPUs, which only works before TensorFlow starts: it runs first. If sharing
the process changed a result, the profiled run's weights would differ and the test
fail: the check cannot pass by accident. Prints the script's JSON line for each style.
"""
import runpy
import sys

import tensorflow as tf

script, steps, styles = sys.argv[1], sys.argv[2], sys.argv[3:]
for style in sorted(styles, key=lambda s: s != "mirrored"):
    tf.keras.backend.clear_session()
    sys.argv = [script, style, steps]
    runpy.run_path(script, run_name="__main__")
