"""The live mode: the model's ZooKeeper writes checked against a real ZooKeeper server."""
