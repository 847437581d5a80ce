"""The reductions of the state space (broker symmetry, partial-order reduction, dead brokers), each with its
soundness gate."""
