# Compile-time declarations for the compiled build (Cython reads this next to the module; Python ignores it).
from kcm.model.txn cimport Txn
from kcm.reference cimport leadership, requests
