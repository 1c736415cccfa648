"""The live GPU: the NVML probe, measurements with PyTorch, validation against them, calibration files."""
