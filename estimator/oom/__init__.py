"""A failed job's post-mortem, read offline (no GPU needed): its evidence, the tensors it could have asked for, and
the terms of the estimate that explain it.

`parse` reads an OOM message, a ``torch.cuda.memory_summary()`` and ``nvidia-smi``; `snapshot` reads a memory
snapshot pickle without executing it; `evidence` turns the inputs into one `Evidence`; `tensors` lists the single
tensors a request can allocate; `explain` reconciles, matches and ranks; `report` holds the `OomReport`.
"""
