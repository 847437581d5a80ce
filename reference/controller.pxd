# Compile-time declarations for the compiled build (Cython reads this next to the module; Python ignores it).
from kcm.model.fmap cimport get
from kcm.model.txn cimport Txn, draft_lookup, draft_peek, draft_sorted_items
from kcm.reference cimport requests
from kcm.reference.partition_machine cimport trigger_online_partition_state_change
from kcm.reference.replica_machine cimport handle_replica_changes
