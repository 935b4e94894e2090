"""The engine: requests and their queues, the block pool and KV cache managers, the scheduler and its
policies, speculative decoding, the engine loop, the decision trace and the step record. The lowest
layer: it knows nothing of time, workloads or scenarios."""
