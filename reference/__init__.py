"""The reference controller and data plane, written as pure operations on the model core."""
