"""``lap bench``: the same matrices (or stacks) through every engine and the peers, timed alike."""
