# Compile-time declarations for the compiled build (Cython reads this next to the module; Python ignores it).
from kcm.model.txn cimport Txn, draft_lookup, draft_peek, draft_sorted_items
from kcm.reference cimport leadership, requests
from kcm.reference.context cimport eligible_brokers, is_deleting

cpdef list handle_partition_changes(Txn t, tps, str target, str selector=*, bint strict=*)
cpdef bint initialize_leader_and_isr(Txn t, tuple tp) except -1
cpdef trigger_online_partition_state_change(Txn t)
