# Compile-time declarations for the compiled build (Cython reads this next to the module; Python ignores it): the
# hot reads below are C functions for the modules that cimport them.
from kcm.model.txn cimport Txn, draft_has, draft_peek, draft_sorted_items

cpdef set eligible_brokers(Txn t)
cpdef bint is_deleting(Txn t, str topic) except -1
cpdef bint has_controller(Txn t) except -1
