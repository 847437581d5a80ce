# Compile-time declarations for the compiled build (Cython reads this next to the module; Python ignores it).
from kcm.model.txn cimport Txn, draft_lookup
from kcm.reference.context cimport has_controller, is_deleting
from kcm.reference.partition_machine cimport handle_partition_changes
