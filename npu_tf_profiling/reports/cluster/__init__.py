"""Cluster analysis: every rank of a job -> cluster step table, slow-rank verdict, merged timeline."""
