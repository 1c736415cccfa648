"""Training and fine-tuning: the workload, model states, activations, `estimate_training` and its report."""
