# Compile-time declarations for the compiled build (Cython reads this next to the module; Python ignores it): the
# request batch is an extension type, and the functions below are called as C functions within this module and by
# the modules that cimport them. Functions a mutant of ci/mutants.py replaces (stale_controller_epoch) stay Python
# calls, so that the replacement is seen.
cimport cython
from kcm.model.txn cimport Txn, draft_has, draft_lookup, draft_peek


@cython.final
cdef class RequestBatch:
    cdef public dict leader_and_isr, update_metadata
    cdef public list stop_replica


cpdef RequestBatch batch(Txn t)
@cython.locals(queued=dict)
cpdef add_leader_and_isr(Txn t, brokers, tuple tp, tuple replicas=*)
@cython.locals(queued=dict)
cpdef add_update_metadata(Txn t, brokers, tps)
@cython.locals(b=RequestBatch)
cpdef flush(Txn t)
cpdef send(Txn t, req)
cpdef bint deliver(Txn t, req) except -1
cpdef _apply_stop_replica(Txn t, req)
