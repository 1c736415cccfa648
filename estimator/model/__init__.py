"""Terms shared by every estimate: the tensor inventory, memory, FLOPs and bytes per phase, time, capacity search."""
