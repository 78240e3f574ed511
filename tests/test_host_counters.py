"""The host sampler's /proc reader gives psutil's figures (runtime/host/counters.py).

A cumulative counter read through psutil between two reads through /proc must lie between them: a misread field,
unit or file moves it out. The current values (RSS, the system's used memory) are held to what can change between
two reads here.
"""
from __future__ import annotations

import sys

import pytest

from npu_tf_profiling.runtime.host.counters import ProcCounters, PsutilCounters, host_counters

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")

CUMULATIVE = ("process_cpu_s", "process_io_bytes", "net_bytes", "system_cpu_s")
# /proc/stat counts clock ticks; psutil divides the same ticks, so its seconds may round to the tick around ours.
TICK_S = 0.01


@pytest.fixture()
def readers():
    proc, ps = ProcCounters(), PsutilCounters()
    yield proc, ps
    proc.close()


@pytest.mark.parametrize("name", CUMULATIVE)
def test_a_cumulative_counter_through_psutil_lies_between_two_reads_through_proc(readers, name: str) -> None:
    proc, ps = readers
    busy = sum(i * i for i in range(200_000))  # some CPU time, so the counters move
    assert busy > 0
    before, theirs, after = getattr(proc, name)(), getattr(ps, name)(), getattr(proc, name)()
    assert len(before) == len(theirs) == len(after)
    slack = TICK_S if isinstance(before[0], float) else 0
    for field, (low, their, high) in enumerate(zip(before, theirs, after)):
        assert low - slack <= their <= high + slack, (name, field, before, theirs, after)


def test_the_current_figures_match_psutil(readers) -> None:
    proc, ps = readers
    assert abs(proc.process_rss_kb() - ps.process_rss_kb()) < 2048  # a 2 MB allocation between two reads at most
    (total, used), (their_total, their_used) = proc.system_memory_kb(), ps.system_memory_kb()
    assert total == their_total and 0 < used < total
    assert abs(used - their_used) < 0.02 * total  # other processes of the machine, between two reads


def test_proc_is_the_reader_on_linux() -> None:
    counters = host_counters()
    try:
        assert isinstance(counters, ProcCounters)
    finally:
        counters.close()
