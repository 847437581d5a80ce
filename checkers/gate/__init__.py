"""The CI gate, the catalogue of Kafka's historical bugs and the Hypothesis machine."""
