"""What the host does while the job trains: the Python stack sampler and GC pauses, the host_sys sampler,
profile_memory's peaks, and the mstx markers; ``collection.HostCollection`` starts, flushes and stops them."""
