"""The engines on this machine (breadth-first, workers, random walks): the one level loop, the visited set, the state
codec, checkpoints, stops, estimates, verdicts, shrinking."""
