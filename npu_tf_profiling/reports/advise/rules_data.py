"""tf.data rules: a map without num_parallel_calls, no prefetch, py_function in the pipeline, file reads
without interleave or cache. Each needs a measured input wait (GetNext) of at least MIN_INPUT_SHARE.

Gain (docs/advise.md): with g the input share and C = 1 - g the rest of the
iteration, the pipeline makes a batch in I = g (no prefetch: it runs inside
GetNext) or I = g + C (with prefetch it overlaps the step, and the wait is
what is left over). A parallel map on P cores makes it I/P; a prefetch then
hides up to C of it: the wait left is max(0, I' - C), the gain g minus that.

More parallelism (a parallel map, a prefetch that overlaps the step, parallel reads) only uses cores that
are idle: when the process kept B of its N cores busy while the iterations ran (info.json's
``process_cpu``), the same work cannot take less than B/N of the time, so each of these gains is at most
1 - B/N (measured: a serial-map case at 1.49 of 2 cores predicted 66.6% and gained nothing; the cap says 25.6%).

A py_function in the map runs under the GIL: one element at a time whatever num_parallel_calls says. Its
gain is the parallel map's with P the free cores (TensorFlow ops doing the same maths are not held by the
GIL), not capped by the idle cores: the busy ones are mostly that Python, whose work the ops replace.
Measured (benchmarks/advise_accuracy.py, 3 runs): the whole wait g = 89% predicted against a 58% gain;
this formula says 55%.
"""
from __future__ import annotations

from typing import Optional

from npu_tf_profiling.raw_format import call_sites as cs
from npu_tf_profiling.reports.advise.evidence import ModelEvidence
from npu_tf_profiling.reports.advise.findings import LOW, MEDIUM, Finding, pct, unknown_where
from npu_tf_profiling.reports.advise.patches import Edit, suggested_diff

MIN_INPUT_SHARE = 0.05
NO_SITES = "no call_sites.json (recorded by this package's runtime since advise; an earlier run, or the pipeline was built before the package loaded)"


def _last_pipeline_step(ev: ModelEvidence, file: str) -> Optional[cs.CallSite]:
    """The pipeline's last call in `file`: on the last line, the last recorded (a chain on one line,
    ``...repeat().batch(64).map(f)``, runs and is recorded left to right; the first of them put the prefetch
    after ``repeat()``)."""
    steps = [s for s in ev.sites.sites if s.api in cs.DATASET_APIS and s.file == file]
    return max(enumerate(steps), key=lambda pair: (pair[1].line, pair[0]))[1] if steps else None


def _idle_capped(ev: ModelEvidence, gain: float, formula: str, evidence: dict) -> tuple[float, str]:
    """The gain at most the idle cores' share 1 - B/N (module docstring), when the run's CPU was recorded."""
    busy = ev.info.busy_cores()
    if busy is None:
        return gain, formula
    used, cores = busy
    cap = max(0.0, 1.0 - used / cores)
    evidence.update(busy_cores=round(used, 2), usable_cores=cores)
    return min(gain, cap), (f"{formula}; at most 1 - B/N = {cap:.3f}: the process kept B = {used:.2f} of N = {cores} "
                            "cores busy, and more parallelism only uses the idle ones")


def _free_cores(ev: ModelEvidence) -> int:
    """The host's free cores for a parallel pipeline, the process's own busy cores not counted as load."""
    busy = ev.info.busy_cores()
    return ev.sites.free_cores(busy[0] if busy else None) or 1


def _wait_left_gain(g: float, cores: int, has_prefetch: bool, why: str) -> tuple[float, str]:
    """g - max(0, I/P - C): the input wait saved when the pipeline makes its batch on P cores (module docstring)."""
    c = max(0.0, 1.0 - g)
    produce = g + c if has_prefetch else g
    gain = max(0.0, g - max(0.0, produce / cores - c))
    return gain, (f"g - max(0, I/P - C) with g = {g:.3f}, C = {c:.3f}, I = {'g + C' if has_prefetch else 'g'}, "
                  f"P = {cores} ({why})")


def parallelism(ev: ModelEvidence) -> list[Finding]:
    g = ev.input_share()
    if g < MIN_INPUT_SHARE:
        return []
    serial = [s for s in ev.sites.of(cs.MAP) if s.args.get("num_parallel_calls") in (None, 1)]
    has_prefetch = bool(ev.sites.of(cs.PREFETCH))
    if ev.sites.recorded and not serial and has_prefetch:
        return []
    cores = _free_cores(ev)
    gain, formula = _wait_left_gain(g, cores if serial else 1, has_prefetch,
                                    "parallel map" if serial else "map already parallel")
    evidence = {"input_share_pct": pct(g), "cpu_count": ev.sites.cpu_count, "load_average": ev.sites.load_average,
                "free_cores": cores, "serial_maps": len(serial),
                "prefetch_present": has_prefetch}
    gain, formula = _idle_capped(ev, gain, formula, evidence)
    if not ev.sites.recorded:
        return [Finding("tf.data parallelism", "Dataset.map(num_parallel_calls) + Dataset.prefetch", evidence,
                        "Dataset.map(..., num_parallel_calls=tf.data.AUTOTUNE) then .prefetch(tf.data.AUTOTUNE)",
                        unknown_where(NO_SITES), pct(gain), formula, LOW)]
    out = []
    if serial:
        site = serial[0]
        edits = [Edit(s.line, "map", "num_parallel_calls", "tf.data.AUTOTUNE") for s in serial if s.file == site.file]
        last = _last_pipeline_step(ev, site.file)
        if not has_prefetch and last is not None:
            edits.append(Edit(last.line, last.api.split(".", 1)[1], appended=".prefetch(tf.data.AUTOTUNE)"))
        diff = suggested_diff(site.file, edits)
        action = "Dataset.map(..., num_parallel_calls=tf.data.AUTOTUNE)" + ("" if has_prefetch else " then .prefetch(tf.data.AUTOTUNE)")
        knob = "Dataset.map(num_parallel_calls)" + ("" if has_prefetch else " + Dataset.prefetch")
        out.append(Finding("tf.data parallelism", knob, evidence, action, site.where, pct(gain), formula, MEDIUM, diff=diff))
    else:
        maps = ev.sites.of(cs.MAP) or [s for s in ev.sites.sites if s.api in cs.DATASET_APIS]
        last = _last_pipeline_step(ev, maps[0].file) if maps else None
        diff = None if last is None else suggested_diff(
            last.file, [Edit(last.line, last.api.split(".", 1)[1], appended=".prefetch(tf.data.AUTOTUNE)")])
        where = last.where if last else unknown_where("no Dataset call of the user's was recorded")
        out.append(Finding("tf.data prefetch", "Dataset.prefetch", evidence,
                           "end the pipeline with .prefetch(tf.data.AUTOTUNE)", where, pct(gain), formula, MEDIUM, diff=diff))
    return out


def py_function(ev: ModelEvidence) -> list[Finding]:
    g = ev.input_share()
    sites = [s for s in ev.sites.of(cs.PY_FUNCTION) if s.args.get("in_pipeline")]
    if g < MIN_INPUT_SHARE or not sites:
        return []
    cores = _free_cores(ev)
    gain, formula = _wait_left_gain(g, cores, bool(ev.sites.of(cs.PREFETCH)),
                                    "TensorFlow ops run on the free cores where the Python held the GIL, one element at a time")
    return [Finding("tf.data py_function", "tf.py_function / numpy_function in Dataset.map",
                    {"input_share_pct": pct(g), "py_functions": len(sites), "free_cores": cores},
                    f"replace {sites[0].args.get('name', 'py_function')} in the map function by TensorFlow ops "
                    "(it runs under the GIL, one element at a time, whatever num_parallel_calls says)",
                    sites[0].where, pct(gain), formula + "; the ops assumed to cost what the Python did", LOW)]


def file_reads(ev: ModelEvidence) -> list[Finding]:
    g = ev.input_share()
    readers = ev.sites.of(cs.FILE_READER)
    if g < MIN_INPUT_SHARE or not readers:
        return []
    out = []
    if not ev.sites.of(cs.CACHE):
        out.append(Finding("tf.data cache", "Dataset.cache", {"input_share_pct": pct(g), "readers": len(readers)},
                           "a dataset that fits in memory: .cache() after the reads and the deterministic map (before shuffle), "
                           "so later epochs do not read the files again", readers[0].where, None,
                           "not predictable: the reads' part of the input wait is not measured apart", LOW))
    if not ev.sites.of(cs.INTERLEAVE):
        cores = _free_cores(ev)
        evidence = {"input_share_pct": pct(g), "readers": len(readers), "free_cores": cores}
        gain, formula = _idle_capped(ev, g * (1 - 1 / cores), f"g * (1 - 1/P), g = {g:.3f}, P = {cores}: reads spread over "
                                     "the cores (an upper bound)", evidence)
        out.append(Finding("tf.data interleave", "Dataset.interleave(num_parallel_calls)", evidence,
                           "read the files in parallel: Dataset.from_tensor_slices(files).interleave(tf.data.TFRecordDataset, "
                           "num_parallel_calls=tf.data.AUTOTUNE)", readers[0].where, pct(gain), formula, LOW))
    return out


RULES = (parallelism, py_function, file_reads)
