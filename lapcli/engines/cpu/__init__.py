"""The CPU engines: the NumPy Hungarian (the CUDA kernel's twin), scipy, lapx, and scipy per problem for stacks."""
