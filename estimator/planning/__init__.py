"""Capacity planning over the catalog: `plan` (rank cards for a goal) and `sweep` (a grid at numpy speed)."""
