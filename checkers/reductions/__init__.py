"""The reductions of the state space (broker symmetry, partial-order reduction), each with its soundness gate."""
