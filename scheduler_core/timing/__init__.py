"""What a step costs: the roofline cost model and its calibration, all-reduces, the host's time per
step, GPU memory (how many KV blocks fit), GPU and model presets and Hugging Face configs."""
