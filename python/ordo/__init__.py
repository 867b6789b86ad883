"""ordo: the Python binding of ordo, a parameter server that orders transfers.

ordo.Client joins a cluster as a worker (include/ordo/ordo.h through ctypes); see
docs/python.md.
"""
from ordo.client import Client, Handle, OrdoError, Timeout, buffer_address, version

__all__ = ["Client", "Handle", "OrdoError", "Timeout", "buffer_address", "version"]
