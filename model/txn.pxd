# Compile-time declarations for the compiled build of txn.py (Cython reads this next to the module; Python ignores
# it): the field descriptor becomes an extension type, so the first read of a draft's field calls its __get__ as a
# C slot instead of through Python's method machinery.

cdef class _Thaw:
    cdef readonly str name
    cdef readonly Py_ssize_t index
    cdef readonly int kind
    cdef readonly str source
