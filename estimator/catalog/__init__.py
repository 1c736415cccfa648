"""Spec models and their readers: GPUs, number formats, model architectures, efficiency profiles,
YAML files and Hugging Face config.json."""
