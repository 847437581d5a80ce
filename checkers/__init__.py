"""The engines that consume the one model: explorers (local and Spark), the Z3 prover, the oracle."""
