"""`python -m npu_tf_profiling` is the same as the `npu-tf-prof` command."""
import sys

from npu_tf_profiling.cli import main

sys.exit(main())
