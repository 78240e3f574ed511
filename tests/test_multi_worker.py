"""Real multi-worker training on localhost: MultiWorkerMirroredStrategy Estimator workers as subprocesses.

Each job is started once per module (fixtures; the 2-worker job once per session,
``conftest.two_workers``, as the msprof-analyze tests read it too) by the sample's launcher
(samples/multi_worker_profiling.py): free ports, one TF_CONFIG per worker, a
timeout, and, when a worker dies, the others stopped after a grace period, so
nothing hangs. Workers import this checkout (PYTHONPATH), not a stale install.

* 2 workers, NPURunConfig, task_trace on steps 10-12: per-rank step traces, the cluster report, tasks in
  the merged timeline;
* 3 workers, env vars, rank 2's input pipeline sleeps 120 ms a batch: slow in input; and anomaly_capture on
  in every rank, with rank 1's forward pass 400 ms slower in steps 32-34 of 40: each rank captures the stretch, and
  the cluster pins it on rank 1;
* 3 workers, NPURunConfig, rank 1's forward pass sleeps: slow in compute; the host switches on
  (with_stack, gc_detect_threshold, host_sys, profile_memory): every rank records its own host;
* 2 workers, rank 1 killed in step 12 after its all-reduce: missing step.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from npu_tf_profiling.cli import main
from npu_tf_profiling.reports.encoders.chrome_trace import validate_chrome_trace
from tests.helpers.multi_worker_jobs import STEPS, run_job
from tests.helpers.raw_fixtures import assert_step_trace_formulas

pytestmark = pytest.mark.timeout(150)
SLOW_INPUT_STEPS, REGIME = 40, (32, 34)


def rank_folders(out: Path) -> dict[int, Path]:
    """rank -> its PROF_* folder; each worker wrote exactly one, holding only its own device folder."""
    found = {}
    for prof in sorted(out.glob("PROF_*")):
        (device,) = prof.glob("device_*")
        found[int(device.name.split("_")[1])] = prof
    return found


def step_trace_csv(prof: Path) -> tuple[list[str], list[list[str]]]:
    (path,) = (prof / "mindstudio_profiler_output").glob("step_trace_*.csv")
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    return rows[0], rows[1:]


def cluster(out: Path, capsys) -> tuple[dict, list[dict[str, str]], str]:
    assert main(["cluster", str(out)]) == 0
    printed = capsys.readouterr().out
    result = out / "npu_tf_prof_cluster"
    with open(result / "cluster_step_trace_time.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return json.loads((result / "slow_rank.json").read_text()), rows, printed


@pytest.fixture(scope="module")
def slow_input(tmp_path_factory):
    """120 ms, not 40: with 3 ranks Dixon's test wants the other two ranks' Data Aug Bound within 3% of
    the range. At 40 ms that is 1.2 ms, and on a loaded 2-core CI machine the fast ranks' Data Aug Bound
    spread 3-7 ms, so rank 2 was an outlier in only 11 of 30 steps and the verdict fell back to "likely
    input" (one CI failure). The sleep is the effect under test; 120 ms puts it clear of that noise in most runs,
    and where the fast ranks' spread still defeats the 3-rank test (35-45 ms seen), the test takes "likely input"."""
    # and, with anomaly_capture in every rank, rank 1's forward pass 400 ms slower in steps REGIME only (after the
    # baseline's 20 iterations and the reference capture, which came at 24-26)
    return run_job(tmp_path_factory, "slow_input", 3, via="env", steps=SLOW_INPUT_STEPS,
                   extra=["--slow-rank", "2", "--slow-input-ms", "120", "--anomaly-capture", "--regime-rank", "1",
                          "--regime-steps", f"{REGIME[0]}-{REGIME[1]}"])


@pytest.fixture(scope="module")
def slow_compute(tmp_path_factory):
    return run_job(tmp_path_factory, "slow_compute", 3, extra=["--slow-rank", "1", "--slow-compute-ms", "40", "--host-switches"])


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    return run_job(tmp_path_factory, "killed", 2, extra=["--kill-rank", "1", "--kill-at-step", "12"], expect_death=1)


# ------------------------------------------------------------------ 2 workers
def test_each_rank_traces_every_step_with_its_all_reduce(two_workers):
    out, codes = two_workers
    assert codes == {0: 0, 1: 0}
    folders = rank_folders(out)
    assert sorted(folders) == [0, 1]
    ids = {}
    for rank, prof in folders.items():
        info = json.loads((prof / f"device_{rank}" / "info.json").read_text())
        assert info["rank_id"] == rank and info["source"] == "session"
        (model,) = info["models"].values()
        assert [t for g in model["all_reduce"] for t in g] == ["CollectiveReduceV2"]
        header, rows = step_trace_csv(prof)
        assert header[10:12] == ["Reduce Start(us)", "Reduce Duration(us)"] and len(header) == 15
        assert len(rows) == STEPS
        assert_step_trace_formulas(header, rows)
        for row in rows:
            fp, end = int(row[2]), int(row[4])
            reduce_start, reduce_duration = int(row[10]), int(row[11])  # "N/A" would raise: filled
            assert fp <= reduce_start and reduce_start + reduce_duration <= end, row
            assert reduce_duration > 0
        ids[rank] = [int(r[1]) for r in rows]
    assert ids[0] == ids[1] == list(range(1, STEPS + 1))  # the global step: aligned across ranks


def test_two_worker_cluster_report(two_workers, capsys):
    out, _ = two_workers
    verdict, rows, printed = cluster(out, capsys)
    ranks = [r for r in rows if r["Type"] == "rank"]
    assert len(ranks) == len(rows) == 2 * STEPS  # no stage rows in a data-parallel job, as msprof-analyze
    assert all(r["Communication"] != "N/A" and int(r["Communication"]) > 0 for r in ranks)
    assert verdict["ranks"] == [0, 1] and verdict["missing_steps"]["total_missing"] == 0
    assert "Missing steps: none" in printed
    events = json.loads((out / "npu_tf_prof_cluster" / "cluster_timeline.json").read_text())
    assert validate_chrome_trace(events) == []
    assert {e["pid"] for e in events if e.get("name") == "process_name"} == {0, 1}
    tasks = {(e["pid"], e["args"]["Iteration ID"]) for e in events if e.get("cat") == "Task"}
    assert tasks == {(rank, step) for rank in (0, 1) for step in (10, 11, 12)}


# ------------------------------------------------------------------ one slow rank of 3
def test_slow_input_rank_is_named_and_the_others_wait(slow_input, capsys):
    out, codes = slow_input
    assert codes == {0: 0, 1: 0, 2: 0}
    for rank, prof in rank_folders(out).items():
        assert json.loads((prof / f"device_{rank}" / "info.json").read_text())["source"] == "env"
    verdict, rows, printed = cluster(out, capsys)
    # "input" when Dixon's test flags rank 2 in most steps, else "likely input" (the wait vote names it and its Data Aug
    # Bound is the longer phase). With 3 ranks Dixon's critical Q is 0.970: the two fast ranks must lie within 3% of the
    # range, and on a loaded 2-core machine their Data Aug Bound spread 35-45 ms against rank 2's 90-136 ms (a fresh-clone
    # run, 2026-12-06): both verdicts name the rank and the cause.
    assert [(s["rank"], s["causes"], s["makes_others_wait"]) for s in verdict["slow_ranks"]] in (
        [(2, ["input"], True)], [(2, ["likely input"], True)]), printed
    reduce = {int(r): w["median_reduce_us"] for r, w in verdict["wait"]["ranks"].items()}
    assert reduce[0] > reduce[2] + 20_000 and reduce[1] > reduce[2] + 20_000, reduce
    assert "SLOW RANK 2: cause input" in printed or "SLOW RANK 2: cause likely input" in printed
    assert len([r for r in rows if r["Type"] == "rank"]) == 3 * SLOW_INPUT_STEPS


def test_each_rank_captures_the_stretch_and_the_cluster_pins_it_on_the_rank_whose_compute_slowed(slow_input, capsys):
    """Rank 1's forward pass sleeps 400 ms in steps 32-34: every rank is slowed (the all-reduce waits for rank 1) and
    detects it with its own anomaly_capture; only rank 1's own time (FP to BP + Data Aug Bound) grew."""
    out, _ = slow_input
    for rank, prof in rank_folders(out).items():
        lines = [json.loads(line) for line in (prof / f"device_{rank}" / "data" / "anomalies.jsonl").read_text().splitlines()]
        assert [line["kind"] for line in lines].count("reference") == 1, (rank, lines)
        (regime,) = [a for a in lines if a["kind"] == "anomaly" and a["first_slow"] <= REGIME[1] and a["last_slow"] >= REGIME[0]]
        assert regime["first_slow"] == REGIME[0] and regime["captured"], (rank, regime)  # its own capture, in the stretch
    verdict, _, printed = cluster(out, capsys)
    (group,) = [g for g in json.loads((out / "npu_tf_prof_cluster" / "anomalies.json").read_text())["groups"]
                if g["first"] <= REGIME[1] and g["last"] >= REGIME[0]]
    assert group["ranks"] == [0, 1, 2] and group["own_time_grew"] == [1] and not group["shared"], group
    assert group["own_growth_us"]["1"] > 300_000, group  # the 400 ms sleep, most of it in the stretch's iterations
    assert "only the own time (FP to BP + Data Aug Bound) of rank 1 (+" in printed


def test_slow_compute_rank_is_named_and_the_others_wait(slow_compute, capsys):
    out, codes = slow_compute
    assert codes == {0: 0, 1: 0, 2: 0}
    verdict, _, printed = cluster(out, capsys)
    assert [(s["rank"], s["causes"], s["makes_others_wait"]) for s in verdict["slow_ranks"]] == [(1, ["compute"], True)], printed
    reduce = {int(r): w["median_reduce_us"] for r, w in verdict["wait"]["ranks"].items()}
    assert reduce[0] > reduce[1] + 20_000 and reduce[2] > reduce[1] + 20_000, reduce
    assert verdict["compute"]["ranks"]["1"]["median_us"] > 40_000


@pytest.mark.parametrize("job, rank, cause", [("slow_compute", 1, "compute"), ("slow_input", 2, "input")])
def test_advise_names_the_rank_the_others_wait_for_not_their_all_reduce(request, job, rank, cause, capsys):
    """In a synchronous job every rank's iteration lasts as long as the slow rank's, and the others' wait reads as an
    exposed all-reduce: advise must name the slow rank and its cause, and withdraw the waiting ranks' packing advice."""
    out, _ = request.getfixturevalue(job)
    assert main(["advise", str(out), "--json"]) == 0
    advices = json.loads(capsys.readouterr().out)
    (slow,) = advices[0]["findings"]
    assert (slow["rule"], slow["evidence"]["rank"], slow["evidence"]["cause"]) == ("slow rank", rank, cause), slow
    assert slow["evidence"]["median_wait_imposed_us"] > 20_000 and slow["expected_gain_pct"] >= 30, slow  # sleeps of 40, 120 ms
    for advice in advices[1:]:
        reduce = [f["device_id"] for f in advice["findings"] if f["rule"] == "all-reduce not overlapped"]
        assert set(reduce) <= {rank}, advice  # only the slow rank's own Reduce is communication without the wait
    assert sum(f"mostly the wait for rank {rank}" in n for a in advices for n in a["notes"]) >= 1


def test_every_rank_records_its_own_host_with_the_switches_on(slow_compute):
    """The host switches through NPURunConfig in an Estimator job: each rank's folder has its stacks, host usage and
    peaks per iteration. At 100 Hz a 3 s job gives ~300 samples a rank; CI's loaded workers starve the sampler ~6x."""
    out, _ = slow_compute
    for rank, prof in rank_folders(out).items():
        report = prof / "mindstudio_profiler_output"
        (folded,) = report.glob("host_stacks_*.folded")
        counts = [(line.split(";", 1)[0], int(line.rsplit(" ", 1)[1])) for line in folded.read_text().splitlines()]
        assert {device for device, _ in counts} == {f"device_{rank}"} and sum(n for _, n in counts) >= 10, counts
        for name in ("host_cpu_usage", "host_mem_usage"):
            (usage,) = report.glob(f"{name}_*.csv")
            assert len(usage.read_text().splitlines()) >= 2, usage
        (memory,) = report.glob("step_memory_*.csv")
        with open(memory, newline="") as handle:
            peaks = list(csv.DictReader(handle))
        assert [int(r["Iteration ID"]) for r in peaks] == list(range(1, STEPS + 1))
        assert all(float(r["Peak Host Memory(MB)"]) > 100 for r in peaks)  # a TensorFlow process holds far more


# ------------------------------------------------------------------ a rank dies
def test_killed_rank_leaves_missing_steps_that_are_reported(killed, capsys):
    out, codes = killed
    assert codes[1] != 0  # killed (SIGKILL); rank 0 was stopped afterwards
    assert sorted(rank_folders(out)) == [0, 1]
    assert not list(out.glob("*_rank1_*_ascend_pt"))  # the killed worker never wrote its reports
    verdict, rows, printed = cluster(out, capsys)
    (msprof_rank1,) = out.glob("*_rank1_*_ascend_pt")  # ... so the cluster command wrote its msprof-analyze folder
    with open(msprof_rank1 / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv", newline="") as handle:
        assert [int(r["Step"]) for r in csv.DictReader(handle)] == list(range(1, 12))
    steps = {rank: sorted(int(r["Step"]) for r in rows if r["Type"] == "rank" and r["Index"] == str(rank)) for rank in (0, 1)}
    assert steps[0] == list(range(1, 13)) and steps[1] == list(range(1, 12))
    assert verdict["missing_steps"]["models"]["1"]["ranks"]["1"] == {"count": 1, "steps": "12", "last_step": 11, "stopped_early": True}
    assert "model 1 rank 1: 1 step(s) missing: 12 (stopped after step 11)" in printed
