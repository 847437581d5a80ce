# Compile-time declarations for the compiled build (Cython reads this next to the module; Python ignores it): `get`
# is a C function for the modules that cimport it (the drafts' reads call it about a million times a run).
cpdef get(m, key, default=*)
