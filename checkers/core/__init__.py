"""Where the reference and the properties meet: the bounded system every engine walks, the scenario runner, and the
evidence of a path."""
