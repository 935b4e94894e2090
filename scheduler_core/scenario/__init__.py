"""A scenario: a whole run's settings (model, GPU, engine, workload, SLOs) from a file, a dict or a
`vllm serve` command line, checked and turned into a `Simulation`."""
