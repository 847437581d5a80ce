# Compile-time declarations for the compiled build (Cython reads this next to the module; Python ignores it).
from kcm.model.txn cimport Txn, draft_has, draft_sorted_items
from kcm.reference cimport requests
from kcm.reference.context cimport has_controller
from kcm.reference.partition_machine cimport handle_partition_changes
from kcm.reference.replica_machine cimport handle_replica_changes
