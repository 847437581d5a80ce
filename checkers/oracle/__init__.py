"""The oracles: a trace, or Kafka's state-change.log, judged against the model."""
