"""`npu-tf-prof advise`: from the measured phases to the knob to turn, the line that sets it, and the expected gain.

`findings` (the dataclass and its JSON schema), `evidence` (what one model's
rules read: shares, other runs, call sites, host truth), one module per rule
group (`rules_data`, `rules_overhead`, `rules_runs`, `rules_host`,
`rules_reduce`; `ranks` across the ranks), `host_truth` (the one reader of the
with_stack / GC / host_sys files), `patches` (the suggested diffs), `engine`.
The formulas are in docs/advise.md.
"""
