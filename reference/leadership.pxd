# Compile-time declarations for the compiled build (Cython reads this next to the module; Python ignores it).
from kcm.model.txn cimport Txn, draft_lookup

# Called as C functions within this module and by the modules that cimport them. conditional_write and
# bump_leader_epoch stay Python calls: mutants of ci/mutants.py replace them.
cpdef check_controller_epoch(Txn t)
cpdef update_leader_and_isr(Txn t, tuple tp, decide)
cpdef refresh_from_zk(Txn t, tuple tp)
