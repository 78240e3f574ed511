"""`npu-tf-prof advise`: each rule on real TensorFlow training (a TF2 Keras pipeline, a TF1 Session loop, one
training each, run side by side), the host-truth rules on real step-trace rows with planted host files, the
gain formulas exactly on synthetic rows, the slow rank, and bad input."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from npu_tf_profiling.cli import main
from npu_tf_profiling.raw_format import host_usage, layout
from npu_tf_profiling.raw_format.host_samples import encode_gc_pause, encode_samples, encode_stack
from npu_tf_profiling.raw_format.call_sites import CALL_SITES_FILE, OTHER_RUN, CallSite, CallSites, encode_call_sites
from npu_tf_profiling.raw_format.other_runs import encode_other_run
from npu_tf_profiling.reports.advise.engine import advise_prof_dir, summary_with_top_finding
from npu_tf_profiling.reports.advise.findings import JSON_SCHEMA
from npu_tf_profiling.reports.step.summary import summarize_prof_dir
from npu_tf_profiling.testing.step_synthetic import T0_US, StepPlan, write_step_prof_dir
from tests.helpers.trace_files import only_prof_dir

SCRIPTS = Path(__file__).parent / "scripts"
TF2_SCRIPT, TF1_SCRIPT = SCRIPTS / "advise_tf2_pipeline.py", SCRIPTS / "advise_tf1_eval.py"


def _line(script: Path, marker: str) -> str:
    number = next(i for i, text in enumerate(script.read_text().splitlines(), 1) if text.endswith(f"# advise: {marker}"))
    return f"{script}:{number}"


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Both scripts profiled at once (one TensorFlow start each, side by side): script name -> its PROF folder."""
    root = tmp_path_factory.mktemp("advise")
    jobs = {}
    for script in (TF2_SCRIPT, TF1_SCRIPT):
        environ = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
        environ.update(TF_CPP_MIN_LOG_LEVEL="2", PROFILING_MODE="true",
                       PROFILING_OPTIONS=json.dumps({"output": str(root / script.stem), "training_trace": "on"}))
        jobs[script.stem] = subprocess.Popen([sys.executable, str(script)], cwd=root, env=environ,
                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for name, job in jobs.items():
        _, err = job.communicate(timeout=400)
        assert job.returncode == 0, err[-4000:]
    return {name: only_prof_dir(root / name) for name in jobs}


def _by_rule(prof: Path) -> dict[str, dict]:
    return {f.rule: f.to_dict() for f in advise_prof_dir(prof).findings}


def test_a_serial_map_without_prefetch_gets_its_line_a_diff_and_a_gain_from_getnext(profiled, capsys) -> None:
    prof = profiled[TF2_SCRIPT.stem]
    found = _by_rule(prof)
    tfdata = found["tf.data parallelism"]
    assert tfdata["where"] == _line(TF2_SCRIPT, "map")
    assert "num_parallel_calls=tf.data.AUTOTUNE" in tfdata["action"] and ".prefetch(tf.data.AUTOTUNE)" in tfdata["action"]
    diff = tfdata["diff"]
    assert "+ds = ds.map(slow, num_parallel_calls=tf.data.AUTOTUNE)  # advise: map" in diff
    assert "+ds = ds.batch(64).prefetch(tf.data.AUTOTUNE)  # advise: last" in diff
    g = tfdata["evidence"]["input_share_pct"]
    assert g == pytest.approx(100 * summarize_prof_dir(prof).models[0].input_share, abs=0.05)
    assert 0 < tfdata["expected_gain_pct"] <= g  # never more than the wait it removes
    # the numpy_function in the second map: the line, and why parallel calls do not help it
    assert found["tf.data py_function"]["where"] == _line(TF2_SCRIPT, "py_function")
    assert "GIL" in found["tf.data py_function"]["action"]
    # its gain: the wait a pipeline on the free cores P would leave, g - max(0, I/P - C), I = g without a prefetch
    py = found["tf.data py_function"]
    g_py, cores = py["evidence"]["input_share_pct"] / 100, py["evidence"]["free_cores"]
    made = g_py + (1 - g_py) if tfdata["evidence"]["prefetch_present"] else g_py
    assert py["expected_gain_pct"] == pytest.approx(100 * (g_py - max(0.0, made / cores - (1 - g_py))), abs=0.15)
    assert "ds = ds.map(slow)  # advise: map" in TF2_SCRIPT.read_text()  # the diff is printed, never applied
    assert main(["advise", str(prof), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    gains = [f["expected_gain_pct"] for f in out[0]["findings"] if f["expected_gain_pct"] is not None]
    assert gains == sorted(gains, reverse=True)
    required = JSON_SCHEMA["items"]["properties"]["findings"]["items"]["required"]
    assert all(set(required) <= set(f) for f in out[0]["findings"])


def test_host_time_between_keras_calls_points_to_steps_per_execution_at_compile(profiled) -> None:
    found = _by_rule(profiled[TF2_SCRIPT.stem])
    summary = summarize_prof_dir(profiled[TF2_SCRIPT.stem])
    h = summary.models[0].between["host_share"]
    if h < 0.05:
        pytest.skip(f"this run's host time between calls was {100 * h:.1f}% (< 5%): the rule rightly stays silent")
    overhead = found["per-call overhead"]
    assert overhead["where"] == _line(TF2_SCRIPT, "compile")
    assert overhead["expected_gain_pct"] == pytest.approx(100 * h * (1 - 1 / 32), abs=0.1)
    assert "+model.compile(\"sgd\", \"mse\", steps_per_execution=32)  # advise: compile" in overhead["diff"]


def test_an_evaluation_run_after_every_step_is_named_with_its_line(profiled, capsys) -> None:
    prof = profiled[TF1_SCRIPT.stem]
    evaluation = _by_rule(prof)["evaluation between steps"]
    assert evaluation["where"] == _line(TF1_SCRIPT, "evaluation")
    assert evaluation["evidence"]["runs_per_step"] == 1.0
    split = summarize_prof_dir(prof).models[0].between
    share = split["other_runs"]["evaluation"]["time_us"] / sum(  # the runs' mean share, first run included
        m.mean_iteration_time_us * m.basis_iterations for m in summarize_prof_dir(prof).models)
    # The gain leaves out the iteration of the first evaluation run (its one-time set-up: graph pruning), and adds
    # the evaluation calls' part of the host time between steps (their Python outside the recorded run).
    evidence = evaluation["evidence"]
    assert evidence["first_runs_left_out"] == 1 and evidence["evaluation_runs"] == split["other_runs"]["evaluation"]["count"] - 1
    assert evidence["runs_pct"] < 100 * share
    assert 0 < evidence["host_credit_pct"] < evidence["runs_pct"] + evidence["host_credit_pct"] < 100
    assert evaluation["expected_gain_pct"] == pytest.approx(evidence["runs_pct"] + evidence["host_credit_pct"], abs=0.11)
    assert main(["summary", str(prof)]) == 0
    assert "Top advice: [evaluation between steps]" in capsys.readouterr().out


def test_host_truth_names_the_line_the_gc_share_and_a_saturated_cpu(tmp_path: Path) -> None:
    """Planted with_stack / GC / host_sys files on synthetic rows: 100 µs between steps, 40 of it GetNext."""
    prof = write_step_prof_dir(tmp_path, StepPlan(iterations=20, get_next=10.0))
    found = _by_rule(prof)
    assert found["host Python between steps"]["where"].startswith("unknown: no with_stack samples")
    data = layout.device_dir(prof, 0) / layout.DATA_DIR
    loop, other, inside = ([["/u/train.py", 9, "<module>"], ["/u/train.py", 42, "log"]], [["/u/train.py", 17, "<module>"]],
                           [["/u/train.py", 99, "<module>"]])
    times, ids = [], []
    for k in range(1, 20):  # 3 samples in each gap: 2 at the loop's line, 1 elsewhere; one inside the step
        gap = T0_US + 1000.0 * k
        times += [gap + 20, gap + 30, gap + 60, gap + 400]
        ids += [1, 1, 2, 3]
    (data / layout.HOST_STACKS_FILE).write_bytes(encode_stack(1, loop, 1) + encode_stack(2, other, 0) + encode_stack(3, inside, 0)
                                                 + encode_samples(times, ids) + b"{torn")
    (data / layout.GC_PAUSES_FILE).write_bytes(b"".join(encode_gc_pause(T0_US + 1000.0 * k + 500, 50.0, 2, 10, 0)
                                                        for k in range(2, 20, 2)))
    # the samples at line 17 fall in a recorded run's span: not the script's own Python (the run's time is the run's)
    (data / layout.OTHER_RUNS_FILE).write_bytes(b"".join(encode_other_run(T0_US + 1000.0 * k + 55, T0_US + 1000.0 * k + 65,
                                                                           "evaluation", None) for k in range(1, 20)))
    (data / layout.HOST_SYS_FILE).write_bytes(host_usage.encode_header({"cpus": 4, "netcard_kbps": None, "freq_hz": 1})
                                              + b"".join(host_usage.encode_sample(T0_US + i * 1e6, {"sys_cpu": [9.0 * i, i, 0, 0, 0, 0.3 * i]})
                                                         for i in range(3)))
    found = _by_rule(prof)
    span = 19 * 1000.0  # the 19 steady iterations: from iteration 1's end to iteration 20's
    gc = 9 * 50.0 / span
    assert found["GC pauses"]["expected_gain_pct"] == pytest.approx(100 * gc, abs=0.05)
    host = found["host Python between steps"]
    assert host["where"] == "/u/train.py:42"
    h = (90.0 - 0.0) / 1000.0 - gc  # the gap less GetNext (no other runs recorded), less GC
    assert host["evidence"]["samples_between"] == 38 and host["evidence"]["samples_at_line"] == 38
    assert host["expected_gain_pct"] == pytest.approx(100 * h, abs=0.05)
    assert found["saturated host CPU"]["evidence"]["host_cpu_usage_pct"] == pytest.approx(100 * (1 - 0.3 / 10.3), abs=0.05)


def test_extra_runs_reduce_and_a_slow_rank_from_synthetic_rows(tmp_path: Path, capsys) -> None:
    out = tmp_path / "job"
    for rank, fp_bp in ((0, 700.0), (1, 1400.0)):
        prof = write_step_prof_dir(tmp_path / str(rank), StepPlan(iterations=10, fp_bp=fp_bp), device_id=rank)
        device = layout.device_dir(prof, rank)
        device.joinpath(layout.INFO_FILE).write_text(json.dumps({"device_id": rank, "rank_id": rank,
                                                                 layout.K_OTHER_RUNS_RECORDED: True}))
        period = 100.0 + fp_bp + 200.0
        runs = [(T0_US + period * k + 20, T0_US + period * k + 80, "summaries") for k in range(1, 10)]
        (device / layout.DATA_DIR / layout.OTHER_RUNS_FILE).write_bytes(b"".join(encode_other_run(*r, None) for r in runs))
        site = CallSite(OTHER_RUN, "/u/train.py", 31, "<module>", {"kind": "summaries", "name": None})
        (device / layout.DATA_DIR / CALL_SITES_FILE).write_text(json.dumps(encode_call_sites([site], 8)))
        out.mkdir(exist_ok=True)
        prof.rename(out / f"{prof.name}_{rank}")
    fast = _by_rule(out / "PROF_4242_20240102030405_SYNTHSTP_0")
    summaries = fast["summaries between steps"]
    assert summaries["where"] == "/u/train.py:31"
    assert summaries["expected_gain_pct"] == pytest.approx(100 * 9 * 60.0 / (9 * 1000.0) * (1 - 1 / 100), abs=0.05)
    # Reduce ends 600 + 300 µs after FP Start, BP End 700 after: 200 µs exposed per 1000 µs iteration
    assert fast["all-reduce not overlapped"]["evidence"]["exposed_reduce_pct"] == 20.0
    assert fast["all-reduce not overlapped"]["expected_gain_pct"] == 15.0
    assert main(["advise", str(out), "--json"]) == 0
    job = json.loads(capsys.readouterr().out)[0]  # the job's finding comes first
    assert job["source"] == str(out)
    slow = job["findings"][0]
    # Ranks that do not wait for each other (each its own Reduce): the slower median Iteration Time, its longer phase
    assert slow["rule"] == "slow rank" and slow["evidence"]["rank"] == 1 and slow["evidence"]["cause"] == "compute"
    assert slow["expected_gain_pct"] == pytest.approx(100 * (1700.0 - 1350.0) / 1700.0, abs=0.05)  # median of 2 ranks


def test_bad_input_exits_2_or_3_without_a_traceback(tmp_path: Path, capsys) -> None:
    assert main(["advise", str(tmp_path / "missing")]) == 2
    empty = tmp_path / "PROF_1_20240101000000_EMPTYAAA"
    layout.device_dir(empty, 0).mkdir(parents=True)
    assert main(["advise", str(empty)]) == 3
    assert main(["advise"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "npu-tf-prof advise:" in err
    assert main(["advise", "--schema"]) == 0
    assert json.loads(capsys.readouterr().out) == JSON_SCHEMA


def _sites(prof: Path, sites: list[CallSite], cpu_count: int = 4) -> None:
    data = layout.device_dir(prof, 0) / layout.DATA_DIR
    (data / CALL_SITES_FILE).write_text(json.dumps(encode_call_sites(sites, cpu_count)))


def test_the_other_rules_from_recorded_sites_and_runs_on_synthetic_rows(tmp_path: Path) -> None:
    """GetNext 300 µs of a 1,000 µs iteration (g = 0.3), host 0.1 between steps; sites as the runtime records them."""
    script = tmp_path / "train.py"
    script.write_text("files = ['a.tfrecord']\nds = tf.data.TFRecordDataset(files)\n"
                      "ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE)\nds = ds.batch(32)\n"
                      "config = NPURunConfig(model_dir='m')\n")
    prof = write_step_prof_dir(tmp_path, StepPlan(iterations=20, data_aug=400.0, get_next=300.0, fp_bp=400.0,
                                                  reduce_offset=0.0, reduce=100.0))
    file = str(script)
    _sites(prof, [CallSite("file reader", file, 2, "<module>", {"reader": "TFRecordDataset"}),
                  CallSite("Dataset.map", file, 3, "<module>", {"num_parallel_calls": "AUTOTUNE"}),
                  CallSite("Dataset.batch", file, 4, "<module>", {}),
                  CallSite("NPURunConfig", file, 5, "<module>", {"iterations_per_loop": 1})])
    retraces = [(T0_US + 1000.0 * k + 500, T0_US + 1000.0 * k + 600, "retrace") for k in (3, 7)]
    data = layout.device_dir(prof, 0) / layout.DATA_DIR
    (data / layout.OTHER_RUNS_FILE).write_bytes(b"".join(encode_other_run(*r, "step") for r in retraces))
    eager = [[file, 9, "<module>"], ["/x/site-packages/tensorflow/python/eager/execute.py", 53, "quick_execute"]]
    (data / layout.HOST_STACKS_FILE).write_bytes(encode_stack(7, eager, 0) + encode_samples(
        [T0_US + 1000.0 * k + 5 for k in range(1, 20)], [7] * 19))
    found = _by_rule(prof)
    g, c = 0.3, 0.7
    prefetch = found["tf.data prefetch"]  # the map is parallel already: the prefetch after the last call, P = 1
    assert prefetch["where"] == f"{file}:4"
    assert prefetch["expected_gain_pct"] == pytest.approx(100 * (g - max(0.0, g - c)))
    assert "+ds = ds.batch(32).prefetch(tf.data.AUTOTUNE)" in prefetch["diff"]
    assert found["tf.data interleave"]["expected_gain_pct"] == pytest.approx(100 * g * (1 - 1 / 4))
    assert found["tf.data cache"]["where"] == f"{file}:2" and found["tf.data cache"]["expected_gain_pct"] is None
    loop = found["per-call overhead"]  # NPURunConfig(iterations_per_loop=1), a Session model (not a function)
    assert loop["where"] == f"{file}:5" and loop["expected_gain_pct"] == pytest.approx(100 * 0.1 * (1 - 1 / 32), abs=0.05)
    assert "+config = NPURunConfig(model_dir='m', iterations_per_loop=32)" in loop["diff"]
    assert found["tf.function retraces"]["evidence"] == {"retraces": 2, "trace_time_us": 200.0}
    assert found["tf.function retraces"]["expected_gain_pct"] == pytest.approx(100 * 200.0 / 19000.0, abs=0.05)
    assert found["eager ops between steps"]["where"] == f"{file}:9"
    assert "all-reduce not overlapped" not in found  # the reduce ends inside FP to BP: overlapped


def test_a_pipeline_chained_on_one_line_gets_its_prefetch_at_the_chain_end(tmp_path: Path) -> None:
    """Sites recorded left to right on one line (as the chain runs): the prefetch goes after the last call."""
    script = tmp_path / "train.py"
    script.write_text("x = load()\nds = tf.data.Dataset.from_tensor_slices(x).repeat().batch(64).map(f, num_parallel_calls=4)\n")
    prof = write_step_prof_dir(tmp_path, StepPlan(iterations=20, data_aug=400.0, get_next=300.0, fp_bp=400.0))
    file = str(script)
    _sites(prof, [CallSite("Dataset.repeat", file, 2, "<module>", {}), CallSite("Dataset.batch", file, 2, "<module>", {}),
                  CallSite("Dataset.map", file, 2, "<module>", {"num_parallel_calls": 4})])
    diff = _by_rule(prof)["tf.data prefetch"]["diff"]
    assert "+ds = tf.data.Dataset.from_tensor_slices(x).repeat().batch(64).map(f, num_parallel_calls=4)" \
           ".prefetch(tf.data.AUTOTUNE)" in diff, diff


def test_each_slow_stretch_gets_the_advice_of_its_own_iterations(tmp_path: Path, capsys) -> None:
    """40 iterations of 1,000 µs; in iterations 21-23 (anomaly_capture's stretch) an evaluation run of 29 ms sits
    between the steps, called from /u/train.py:77: the stretch's advice names that run and its line, with the gain
    as a share of the stretch's own iteration time (30 of 31 ms: 29 ms of runs, 1 of the rest)."""
    prof = write_step_prof_dir(tmp_path, StepPlan(iterations=40, gap_spikes={k: 29_000.0 for k in (20, 21, 22)}))
    device = layout.device_dir(prof, 0)
    device.joinpath(layout.INFO_FILE).write_text(json.dumps({"device_id": 0, layout.K_OTHER_RUNS_RECORDED: True}))
    ends = T0_US + np.cumsum([1000.0 + (29_000.0 if k in (20, 21, 22) else 0.0) for k in range(40)])
    runs = [(ends[k - 1] + 50.0, ends[k - 1] + 29_050.0, "evaluation") for k in (20, 21, 22)]  # in the gap before 21..23
    (device / layout.DATA_DIR / layout.OTHER_RUNS_FILE).write_bytes(b"".join(encode_other_run(*r, None) for r in runs))
    site = CallSite(OTHER_RUN, "/u/train.py", 77, "<module>", {"kind": "evaluation", "name": None})
    (device / layout.DATA_DIR / CALL_SITES_FILE).write_text(json.dumps(encode_call_sites([site], 8)))
    (device / layout.DATA_DIR / layout.ANOMALIES_FILE).write_text(json.dumps(
        {"kind": "anomaly", "model_id": 1, "first_slow": 21, "last_slow": 23, "factor": 30.0, "baseline_us": 1000.0,
         "captured": [], "persisted": True}) + "\n")
    (entry,) = summary_with_top_finding(prof).anomalies
    top = entry["advice"][0]
    assert (top["rule"], top["where"]) == ("evaluation between steps", "/u/train.py:77"), entry["advice"]
    assert top["expected_gain_pct"] == pytest.approx(100 * 29.0 / 30.0, abs=1.0)
    assert main(["summary", str(prof)]) == 0
    assert "advice on these iterations: [evaluation between steps]" in capsys.readouterr().out
    assert main(["advise", str(prof)]) == 0
    assert "the slow stretch at iterations 21..23 (anomaly_capture): [evaluation between steps]" in capsys.readouterr().out


def test_a_parallelism_gain_is_at_most_the_idle_cores_share(tmp_path: Path) -> None:
    """GetNext 300 µs of 1,000 (g = 0.3), a serial map, no prefetch, 4 free cores: the formula says 0.3 - max(0,
    0.3/4 - 0.7) = 30%; the process kept 3.6 of its 4 cores busy while the iterations ran, so at most 1 - 3.6/4 = 10%."""
    prof = write_step_prof_dir(tmp_path, StepPlan(iterations=20, data_aug=400.0, get_next=300.0, fp_bp=400.0,
                                                  reduce_offset=0.0, reduce=100.0))
    script = tmp_path / "train.py"
    script.write_text("ds = tf.data.Dataset.range(9)\nds = ds.map(parse)\nds = ds.batch(32)\n")
    _sites(prof, [CallSite("Dataset.map", str(script), 2, "<module>", {"num_parallel_calls": None}),
                  CallSite("Dataset.batch", str(script), 3, "<module>", {})])
    assert _by_rule(prof)["tf.data parallelism"]["expected_gain_pct"] == 30.0
    info = layout.device_dir(prof, 0) / layout.INFO_FILE
    cpu = {"first_us": T0_US, "first_cpu_s": 10.0, "last_us": T0_US + 2e6, "last_cpu_s": 17.2, "cores": 4}
    info.write_text(json.dumps({**json.loads(info.read_text()), "process_cpu": cpu}))
    capped = _by_rule(prof)["tf.data parallelism"]
    assert capped["expected_gain_pct"] == 10.0 and capped["evidence"]["busy_cores"] == 3.6
    assert "at most 1 - B/N = 0.100" in capped["gain_formula"]


def test_free_cores_count_the_process_own_busy_cores_as_its_load() -> None:
    """The load average counts the training process's own threads: on 2 cores at load 2.2, a process keeping 1.2
    cores busy leaves 1 free (counting it as one core left none); load 1.1 leaves 2 (1.9, rounded, not cut to 1)."""
    assert CallSites(cpu_count=2, load_average=2.2).free_cores(1.2) == 1
    assert CallSites(cpu_count=2, load_average=3.5).free_cores(1.2) == 1  # at least one
    assert CallSites(cpu_count=2, load_average=1.1).free_cores() == 2
    assert CallSites(cpu_count=8, load_average=5.0).free_cores(2.0) == 5
    assert CallSites(load_average=1.0).free_cores() is None
