"""lapcli's CUDA runtime, below the engines: the device probe, the driver API, the NVRTC compile
path and its disk cache, pinned uploads (staging), and one launcher module per kernel family with
that kernel's ABI (hungarian_abi, batch_lap). Importing this package imports nothing."""
