"""Plain (unprofiled) runs of several tests/scripts/tf2_train.py styles in one process, for the bit-identity checks.

Usage: tf2_train_plain.py STEPS STYLE...

Starting TensorFlow is most of a short run's cost, and a plain run needs no fresh
process of its own (no start-up hook to test), so the styles share one: each is
tf2_train.py run again (runpy) after clear_session, and the script's own
set_random_seed resets every seed. "mirrored" gives TensorFlow two logical CPUs,
which only works before TensorFlow starts: it runs first. If sharing the process
changed a result, the profiled run's weights would differ and the test fail: the
check cannot pass by accident. Prints tf2_train.py's JSON line for each style.
"""
import runpy
import sys
from pathlib import Path

import tensorflow as tf

SCRIPT = Path(__file__).with_name("tf2_train.py")
steps, styles = sys.argv[1], sys.argv[2:]
for style in sorted(styles, key=lambda s: s != "mirrored"):
    tf.keras.backend.clear_session()
    sys.argv = [str(SCRIPT), style, steps]
    runpy.run_path(str(SCRIPT), run_name="__main__")
