cimport cython
from kcm.model.fmap cimport get as fmap_get

# Compile-time declarations for the compiled build of txn.py (Cython reads this next to the module; Python ignores
# it): the field descriptor becomes an extension type, so the first read of a draft's field calls its __get__ as a
# C slot instead of through Python's method machinery.

cdef class _Thaw:
    cdef readonly str name
    cdef readonly Py_ssize_t index
    cdef readonly int kind
    cdef readonly str source


# Reads of a draft's field, called as C functions by the modules that cimport them.
@cython.locals(fields=dict)
cpdef draft_lookup(object draft, str name, object key, object default=*)
@cython.locals(fields=dict)
cpdef bint draft_has(object draft, str name, object key) except -1
@cython.locals(fields=dict)
cpdef draft_peek(object draft, str name)
@cython.locals(fields=dict)
cpdef draft_sorted_items(object draft, str name)


# The working copy of one step: a final extension type, so that a module declaring `t: Txn` (cimported in its own
# `.pxd`) reads these attributes from the object's struct and calls these methods as C functions. The fields thawed
# on first access (brokers, replicas, inflight) and `base` stay in the instance's __dict__.
@cython.final
cdef class Txn:
    cdef dict __dict__
    cdef public object config, rules, zk, ctx, ghost, zombie, result, request_batch
    cdef public object max_leader_epoch, max_controller_epoch
    cdef public list requests, state_changes, notes

    cpdef lookup(self, str name, key, default=*)
    cpdef items(self, str name)
    cpdef str partition_state(self, tuple tp)
    cpdef set_partition_state(self, tuple tp, str target)
    cpdef bint can_move_partition(self, tuple tp, str target)
    cpdef note(self, str text)
