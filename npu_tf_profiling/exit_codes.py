"""Every exit code the package gives, in one place: the `npu-tf-prof` sub-commands', and a lost rank's.

They sit at the bottom of the import graph so a sub-command in any room can use
them without importing the CLI (which loads sub-commands, not the reverse).
"""
EXIT_OK = 0
EXIT_RANK_LOST = 1  # a training process whose peer rank is gone (bridge.ranks.session_join's watchdog ends it)
EXIT_BAD_INPUT = 2  # missing/corrupt file, bad arguments, a name not in the graph
EXIT_NOT_FOUND = 3  # the input was readable but held nothing to report (no fp/bp, no iterations)
EXIT_REGRESSION = 4  # `diff`: the candidate's Iteration Time rose past the threshold (a CI job fails on it)
EXIT_JOB_KILLED = 5  # `watch`: the job died (a PROF folder never closed, and its writer process is gone)
EXIT_BROKEN_PIPE = 141  # stdout closed early (`... | head`): 128 + SIGPIPE, what the shell reports for cat or grep
