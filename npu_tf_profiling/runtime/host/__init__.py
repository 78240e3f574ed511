"""What the host does while the job trains: the host_sys sampler, profile_memory's peaks, and the mstx markers."""
