"""The timing tests' measure of other processes' CPU: it counts a process that is not ours, not our own children."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.helpers.host_busy import OthersCpu

pytestmark = pytest.mark.timing  # it needs a host where nothing else runs: the other phase's second worker would count

BURN = "import time\nend = time.monotonic() + 1.0\nwhile time.monotonic() < end: pass"


def test_a_process_we_do_not_wait_for_counts_as_others() -> None:
    burner = subprocess.Popen([sys.executable, "-c", BURN])
    with OthersCpu() as others:
        time.sleep(1.0)  # the burner's CPU joins our children's only once waited for: after the block
    burner.wait()
    # A single-threaded burner keeps one core busy for most of the 1 s block (its interpreter starts within it).
    assert others.cores >= 0.7 and not others.quiet, others


def test_our_own_children_do_not_count() -> None:
    with OthersCpu() as others:
        subprocess.run([sys.executable, "-c", BURN], check=True)
    assert others.cores <= 0.3, others
