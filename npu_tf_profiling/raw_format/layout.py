"""Names and paths of the on-disk contract (``docs/output_format.md``).

The runtime (which writes) needs TensorFlow and the reports (which read) must
not, so both take the names from here, and neither defines a path of its own.
The runtime imports the reports in one place only: the lazy "write the reports
now" call at session close.

    <output>/PROF_<pid>_<YYYYmmddHHMMSS>_<8 random chars>/      one per process
        device_<id>/
            info.json                 resolved options, source, models and their
                                      TracePoints, versions, host, pid, rank...
            data/
                training_trace.bin    fixed-width binary records, appended in batches (training_frame)
                training_trace.jsonl  the older format: one JSON object per iteration (still read)
        mindstudio_profiler_output/
            step_trace_<ts>.csv / step_trace_<ts>.json   (reports)

A training_trace record (times are microseconds since the Unix epoch, floats), as the
older .jsonl line spells it (training_frame holds the same fields in binary):
    {"model_id": 1,               # one per distinct training graph
     "run": 7,                    # per-model counter of the graph's iterations (train-op runs), from 1
     "step": 7 | null,            # global step after the update, when the graph has one
     "get_next": [[start, end], ...],   # one pair per data-input op, may be []
     "fp_start": float | null,
     "bp_end": float | null,
     "reduce": [[start, end], ...],     # one pair per all-reduce group, may be []
     "iteration_end": float}

Readers must tolerate a torn last line (the process was killed mid-write).

task_trace raw data, beside it in data/ (framing in ``task_record``):
    task_trace.bin            framed records, one per traced iteration, each written with one os.write:
                              TASK_MAGIC (4 bytes) | uint32 LE header length | header (UTF-8 JSON) |
                              uint64 LE payload length | payload (a serialized tensorflow StepStats protobuf)
                              header: {"model_id": int, "run": int, "step": int | null,
                                       "run_start_us": float, "run_end_us": float}
                              ("run" joins the training_trace record of the same iteration)
    task_xspace.bin           TensorFlow 2 steps: framed the same way (XSPACE_MAGIC), one record per task window
                              (tf.profiler session), its payload the profiler's serialized XSpace as it came;
                              header: {"anchors_us": [start, stop],   # eager tf.timestamp() values (epoch µs)
                                       "calls": [task_trace header, ...]}   # the window's iterations
                              (the reports turn each call's kernels into that iteration's StepStats)
    graph_ops_<model_id>.json {"op name": "OpType", ...} for that model's graph (StepStats has no op types)
Readers must tolerate a torn last record.

What else ran between iterations, beside it in data/ (``other_runs``):
    other_runs.jsonl          one JSON object per session run / tf.function call that was not a training step,
                              made while step-trace collection was on:
                              {"start_us": float, "end_us": float, "kind": "input reads" | "evaluation" | "summaries" |
                               "checkpoint" | "initialization" | "variable reads" | "validation" | "prediction" | "function calls", "name": str | null}
                              info.json's "other_runs_recorded": true says the runtime recorded them (a folder
                              without the key is from an earlier version: the reports do not split the gap), and
                              "other_runs": {kind: {"count": n, "time_us": t}} totals them over the whole run.

Host side (``host_sys`` / ``host_sys_usage`` / ``profile_memory`` and the ``npu_tf_profiling.mstx`` markers), in data/:
    host_sys.jsonl            one JSON object per sample of the host sampler thread (written in batches of about 1 s):
                              {"t_us": float,                       # time.time() of the sample, epoch µs
                               "cpu": [user_s, system_s],           # this process's CPU seconds so far (host_sys cpu)
                               "sys_cpu": [user, system, iowait, irq, softirq, idle],  # the machine's CPU seconds
                               "mem": rss_kb,                       # this process's RSS (host_sys mem)
                               "sys_mem": [total_kb, used_kb],      # the machine's memory (host_sys_usage mem)
                               "disk": [read_bytes, write_bytes],   # this process's I/O so far (host_sys disk)
                               "net": [recv_bytes, sent_bytes],     # the machine's network I/O so far (host_sys network)
                               "hwm_kb": kb,                        # profile_memory: peak RSS since the previous sample
                               "dev_peak": bytes}                   # profile_memory on a GPU: the allocator's peak since then
                              each key present only when asked; the first line is {"header": {...}} with
                              "cpus" (logical CPUs), "netcard_kbps" and "freq_hz".
    mstx.jsonl                one JSON object per marker: {"kind": "mark" | "range", "message": str, "domain": str,
                               "tid": int, "start_us": float, "end_us": float}  (a mark has start_us == end_us)
"""
from __future__ import annotations

from pathlib import Path

PROF_DIR_PREFIX = "PROF_"
DEVICE_DIR_PREFIX = "device_"
INFO_FILE = "info.json"
DATA_DIR = "data"
TRAINING_TRACE_FILE = "training_trace.jsonl"  # the older text format, still read
TRAINING_FRAMES_FILE = "training_trace.bin"  # what the runtime writes
REPORT_DIR = "mindstudio_profiler_output"

# Keys of one training_trace record.
K_MODEL_ID = "model_id"
K_RUN = "run"
K_STEP = "step"
K_GET_NEXT = "get_next"
K_FP_START = "fp_start"
K_BP_END = "bp_end"
K_REDUCE = "reduce"
K_ITERATION_END = "iteration_end"

# The scope of every op the profiler adds to a graph: discovery leaves them out, the task reports skip them.
PROBE_SCOPE = "npu_tf_profiling_probes"
# info.json, per model: the user's fp/bp points that were asked for but not used (runtime writes, summary reads).
K_TRACE_POINTS_FALLBACK = "trace_points_fallback"
# A model's info.json entry: the iteration end against its calls' host returns (runtime/end_check.py); "note" when early.
K_ITERATION_END_CHECK = "iteration_end_check"

TASK_TRACE_FILE = "task_trace.bin"
TASK_MAGIC = b"NTT1"
XSPACE_FILE = "task_xspace.bin"
XSPACE_MAGIC = b"NTX1"
# Keys of an xspace record header.
K_ANCHORS = "anchors_us"
K_CALLS = "calls"
GRAPH_OPS_FILE = "graph_ops_{model_id}.json"
OTHER_RUNS_FILE = "other_runs.jsonl"
K_OTHER_RUNS_RECORDED = "other_runs_recorded"  # info.json
K_OTHER_RUNS = "other_runs"  # info.json: {kind: {"count": n, "time_us": t}} over the whole run
# The `tensorboard` option's event files, under its logdir (written live by the runtime, whole by the reports).
TENSORBOARD_RUN = "rank_{rank}_model_{model_id}"
TENSORBOARD_EVENT_FILE = "events.out.tfevents.{first}.{prof}.npu_tf_profiling"  # first: the first Iteration End, s
TENSORBOARD_TAG_PREFIX = "step_trace/"
TENSORBOARD_FILE_VERSION = "brain.Event:2"
ANOMALIES_FILE = "anomalies.jsonl"  # anomaly_capture: one JSON object a line, each capture (reference or anomaly)
K_CLOSED = "closed_us"  # info.json: when the job closed the folder (absent while it runs, or if it was killed)
# Keys of a task_trace record header.
HOST_STACKS_FILE = "host_stacks.jsonl"  # with_stack: the training thread's Python stacks (``host_samples``)
GC_PAUSES_FILE = "gc_pauses.jsonl"  # gc_detect_threshold: Python GC pauses (``host_samples``)

K_RUN_START = "run_start_us"
K_RUN_END = "run_end_us"


HOST_SYS_FILE = "host_sys.jsonl"
MSTX_FILE = "mstx.jsonl"


def host_sys_path(prof_dir: Path, device_id: int) -> Path:
    return device_dir(prof_dir, device_id) / DATA_DIR / HOST_SYS_FILE


def mstx_path(prof_dir: Path, device_id: int) -> Path:
    return device_dir(prof_dir, device_id) / DATA_DIR / MSTX_FILE


def device_dir(prof_dir: Path, device_id: int) -> Path:
    return Path(prof_dir) / f"{DEVICE_DIR_PREFIX}{device_id}"


def training_trace_path(prof_dir: Path, device_id: int) -> Path:
    """The older one-JSON-line-per-iteration file (synthetic data and earlier runs)."""
    return device_dir(prof_dir, device_id) / DATA_DIR / TRAINING_TRACE_FILE


def training_frames_path(prof_dir: Path, device_id: int) -> Path:
    """The binary step-trace file the runtime appends to."""
    return device_dir(prof_dir, device_id) / DATA_DIR / TRAINING_FRAMES_FILE


def training_trace_files(device_folder: Path) -> list[Path]:
    """The step-trace files a device folder holds, binary first (either format may be present)."""
    data = Path(device_folder) / DATA_DIR
    return [p for p in (data / TRAINING_FRAMES_FILE, data / TRAINING_TRACE_FILE) if p.is_file()]


def task_trace_path(prof_dir: Path, device_id: int) -> Path:
    return device_dir(prof_dir, device_id) / DATA_DIR / TASK_TRACE_FILE


def task_trace_files(device_folder: Path) -> list[Path]:
    """The task record files a device folder holds (Session iterations first, then TensorFlow 2 windows)."""
    data = Path(device_folder) / DATA_DIR
    return [p for p in (data / TASK_TRACE_FILE, data / XSPACE_FILE) if p.is_file()]


def xspace_path(prof_dir: Path, device_id: int) -> Path:
    return device_dir(prof_dir, device_id) / DATA_DIR / XSPACE_FILE


def other_runs_path(prof_dir: Path, device_id: int) -> Path:
    return device_dir(prof_dir, device_id) / DATA_DIR / OTHER_RUNS_FILE


def host_stacks_path(prof_dir: Path, device_id: int) -> Path:
    return device_dir(prof_dir, device_id) / DATA_DIR / HOST_STACKS_FILE


def gc_pauses_path(prof_dir: Path, device_id: int) -> Path:
    return device_dir(prof_dir, device_id) / DATA_DIR / GC_PAUSES_FILE


def anomalies_path(prof_dir: Path, device_id: int) -> Path:
    return device_dir(prof_dir, device_id) / DATA_DIR / ANOMALIES_FILE


def graph_ops_path(prof_dir: Path, device_id: int, model_id: int) -> Path:
    return device_dir(prof_dir, device_id) / DATA_DIR / GRAPH_OPS_FILE.format(model_id=model_id)


def report_dir(prof_dir: Path) -> Path:
    return Path(prof_dir) / REPORT_DIR


def device_dirs(prof_dir: Path) -> list[Path]:
    """The device_<id> folders of one PROF_* folder, by device id."""
    found = [p for p in Path(prof_dir).glob(f"{DEVICE_DIR_PREFIX}*") if p.is_dir()]
    return sorted(found, key=lambda p: int(p.name[len(DEVICE_DIR_PREFIX):]) if p.name[len(DEVICE_DIR_PREFIX):].isdigit() else -1)
