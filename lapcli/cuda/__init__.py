"""lapcli's CUDA runtime, below the engines: the device probe, the driver API, one runtime (NVRTC
compile and disk cache, load, launch, one allocation per solve, events: runtime.py), pinned uploads
(staging), and one launcher module per kernel with that kernel's ABI (hungarian + hungarian_abi,
batch_lap + batch_abi). Importing this package imports nothing."""
