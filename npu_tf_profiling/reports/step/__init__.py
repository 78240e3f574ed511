"""Step trace: training_trace records -> the step_trace table, its CSV and JSON timeline, and the summary."""
