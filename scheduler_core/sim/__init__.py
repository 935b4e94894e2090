"""The simulation: one engine on a clock, step by step (`Simulation.step` -> `StepRecord`), its metrics,
snapshots for stepping back, and the replay of vLLM's recorded traces."""
