cimport cython

# Compile-time declarations for the compiled build of codec.py (Cython reads this next to the module; Python
# ignores it): the codec is a final extension type, so its recursion over a state's records and its memo lookups
# are C calls instead of Python method calls (an encoding calls them a few dozen times).

@cython.final
cdef class StateCodec:
    cdef public Py_ssize_t limit
    cdef public dict encoded
    cdef public dict decoded
    cdef public dict types
    cdef public dict formats
    cdef public dict values

    cpdef object head(self, type kind)
    @cython.locals(memo=dict, fields=list, chunks=list, known=dict, i=Py_ssize_t, got=tuple, lengths=list, wide=bint,
                   n=Py_ssize_t, longest=Py_ssize_t)
    cpdef bytes encode(self, object state)
    @cython.locals(memo=dict, objects=list, pos=Py_ssize_t, n=Py_ssize_t, j=Py_ssize_t, count=Py_ssize_t,
                   lengths=tuple, wide=bint)
    cpdef object decode(self, bytes data)

