"""Reports of the host side: CANN's host usage CSVs, the host timeline, memory per iteration, the mstx markers."""
