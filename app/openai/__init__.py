"""`servescope serve --openai`: a simulated engine served on vLLM's OpenAI-compatible routes."""
