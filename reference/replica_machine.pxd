# Compile-time declarations for the compiled build (Cython reads this next to the module; Python ignores it).
from kcm.model.txn cimport Txn, draft_lookup, draft_peek
from kcm.reference cimport leadership, requests
from kcm.reference.context cimport is_deleting

cpdef handle_replica_changes(Txn t, replicas, str target, bint strict=*)
