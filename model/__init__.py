"""The rules and the state of the ZooKeeper-mode controller: the one definition every engine reads."""
