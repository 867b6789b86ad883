"""torch_cluster: the ordo.torch tests' cluster (tests/python/cluster.py)."""
from cluster import SRC, Cluster

__all__ = ["SRC", "Cluster"]
