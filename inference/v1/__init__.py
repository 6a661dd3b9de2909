"""The OpenAI-compatible surface (/v1/): serializers, plan, wire shapes and SSE, views, schema, keys, rate limits."""
