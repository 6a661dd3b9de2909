"""EqLM itself: model code, generation service, model registry and the OpenAI-compatible API."""
