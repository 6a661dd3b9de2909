"""The /v1/ schema pieces the views declare, and the API reference page's content read from the generated OpenAPI
schema (so the page cannot drift from it)."""

from functools import lru_cache

from drf_spectacular.utils import OpenApiResponse

from eqlm.limits import DEPTH_CAP_MAX, DEPTH_MAX, HALTS, STARTS

V1_TAG = "v1 (OpenAI-compatible)"
EQLM_FIELDS = ("depth", "tol", "start", "halt", "warm_start", "solver", "precision")

# --- what the /v1/ views declare in the schema -----------------------------------------------------------------------

ERROR_RESPONSES = {
    400: OpenApiResponse(description="invalid_request_error naming the bad parameter (e.g. depth)"),
    401: OpenApiResponse(description="authentication_error: missing or wrong API key (when keys are required)"),
    404: OpenApiResponse(description="model_not_found"),
    429: OpenApiResponse(description="rate_limit_error, with a Retry-After header"),
    503: OpenApiResponse(description="the server is generating at capacity (Retry-After) or the model is unavailable"),
}
MODEL_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "object": {"type": "string", "enum": ["model"]},
        "created": {"type": "integer"},
        "owned_by": {"type": "string"},
        "members": {
            "type": "array",
            "items": {"type": "string"},
            "description": "eqlm-council only: its default members (the kinetic object's default `members`)",
        },
        "eqlm": {
            "type": "object",
            "description": "EqLM: the model as this server serves it (the state is this web process's).",
            "properties": {
                "name": {"type": "string"},
                "default": {"type": "boolean", "description": "the model a request gets when it names no other"},
                "default_depth": {"type": "integer", "description": "the depth without `depth` or `tol`"},
                "max_depth": {
                    "type": "integer",
                    "description": f"the most iterations `depth` may ask for: the manifest's max_depth ({DEPTH_MAX} "
                    f"unless it declares another, at most {DEPTH_CAP_MAX})",
                },
                "model_class": {"type": "string", "enum": ["EqLM", "ExplicitLM"]},
                "controls": {
                    "type": "object",
                    "description": "what a request may set, from the manifest (eqlm/manifest.py): an explicit "
                    "transformer's depth is its layer count, with no tol, start or halting rule and solver picard only",
                    "properties": {
                        "min_depth": {"type": "integer"},
                        "max_depth": {"type": "integer"},
                        "default_depth": {"type": "integer"},
                        "solvers": {"type": "array", "items": {"type": "string"}},
                        "starts": {"type": "array", "items": {"type": "string"}},
                        "halts": {"type": "array", "items": {"type": "string"}},
                        "tol": {"type": "boolean", "description": "whether it takes a tol (adaptive halting)"},
                        "precisions": {"type": "array", "items": {"type": "string", "enum": ["fp32", "int8"]}},
                        "note": {"type": "string", "description": "why its controls are fixed (explicit only)"},
                    },
                },
                "state": {"type": "string", "enum": ["loaded", "not loaded", "failed"]},
                "error": {"type": "string", "description": "why the model failed to load (state `failed`)"},
            },
        },
    },
}


COUNCIL_SCHEMA = {
    "type": "object",
    "description": "eqlm-council only: the game per generated token (streamed: the tokens of that chunk).",
    "properties": {
        "members": {"type": "array", "items": {"type": "string"}},
        "kinetic": {
            "type": "object",
            "description": "the controls used (members, tau, beta, eta, max_iter, tol, reference)",
        },
        "mean_game_updates": {"type": "number", "description": "the game's updates per generated token"},
        "converged_fraction": {"type": "number", "nullable": True},
        "tokens": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "index": {"type": "integer"},
                    "choice": {"type": "integer", "description": "top-level object only: the choice it belongs to"},
                    "token": {"type": "integer", "minimum": 0, "maximum": 255},
                    "text": {"type": "string"},
                    "weights": {"type": "array", "items": {"type": "number"}, "description": "in member order"},
                    "reputations": {
                        "type": "array",
                        "items": {"type": "number"},
                        "nullable": True,
                        "description": "with memory: each member's reputation over the context before this token",
                    },
                    "leader": {"type": "string"},
                    "iterations": {"type": "integer"},
                    "residual": {"type": "number", "nullable": True},
                    "converged": {"type": "boolean"},
                    "members": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "model": {"type": "string"},
                                "iterations": {"type": "integer"},
                                "residual": {"type": "number", "nullable": True},
                            },
                        },
                    },  # fmt: skip
                },
            },
        },
    },
}
EQLM_SCHEMA = {
    "type": "object",
    "description": "What the equilibrium solver did.",
    "properties": {
        "depth_requested": {"type": "integer", "nullable": True},
        "mode": {"type": "string", "enum": ["fixed", "adaptive"]},
        "tol": {"type": "number", "nullable": True},
        "start": {"type": "string", "enum": list(STARTS), "description": "where each position's solve started"},
        "noise_seed": {
            "type": "integer",
            "nullable": True,
            "description": 'start "noise" only: the seed of its normals (this choice\'s, seed + its index)',
        },
        "warm_start": {"type": "boolean", "description": 'start == "warm" (the older field)'},
        "halt": {
            "type": "string",
            "enum": list(HALTS),
            "nullable": True,
            "description": "the halting rule used with tol; null at a fixed depth",
        },
        "solver": {"type": "string"},
        "precision": {"type": "string", "enum": ["fp32", "int8"], "description": "the weights that answered"},
        "mean_iterations": {
            "type": "number",
            "nullable": True,
            "description": "block iterations per generated token (the council: the mean over its members); with no "
            "generated token, the prompt solve's: the depth when fixed, null when adaptive",
        },
        "iterations_per_token": {
            "type": "array",
            "items": {"type": "number"},
            "description": "block iterations of each generated token (whole numbers; the council: the members' mean)",
        },
        "mean_game_updates": {
            "type": "number",
            "nullable": True,
            "description": "eqlm-council only: the game's updates per generated token (null when none was generated)",
        },
        "game_updates_per_token": {"type": "array", "items": {"type": "integer"}, "description": "eqlm-council only"},
        "final_residual": {"type": "number", "nullable": True},
        "council": COUNCIL_SCHEMA,
    },
}
USAGE_SCHEMA = {
    "type": "object",
    "properties": {k: {"type": "integer"} for k in ("prompt_tokens", "completion_tokens", "total_tokens")},
}


COMPLETION_LOGPROBS_SCHEMA = {
    "type": "object",
    "nullable": True,
    "description": "With `logprobs`: one entry per token (with `echo`, the prompt's first; its first logprob is "
    "null). Tokens are bytes: ASCII is its character, a byte >= 0x80 is `bytes:\\xNN`; text_offset counts bytes.",
    "properties": {
        "tokens": {"type": "array", "items": {"type": "string"}},
        "token_logprobs": {"type": "array", "items": {"type": "number", "nullable": True}},
        "top_logprobs": {
            "type": "array",
            "items": {"type": "object", "nullable": True, "additionalProperties": {"type": "number"}},
        },
        "text_offset": {"type": "array", "items": {"type": "integer"}},
    },
}
_TOP_ENTRY = {
    "type": "object",
    "properties": {
        "token": {"type": "string"},
        "logprob": {"type": "number"},
        "bytes": {"type": "array", "items": {"type": "integer"}},
    },
}
CHAT_LOGPROBS_SCHEMA = {
    "type": "object",
    "nullable": True,
    "description": "With `logprobs: true`: each generated token with its raw byte and `top_logprobs` alternatives.",
    "properties": {
        "content": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {**_TOP_ENTRY["properties"], "top_logprobs": {"type": "array", "items": _TOP_ENTRY}},
            },
        }
    },
}


def completion_response_schema(kind: str) -> dict:
    choice = (
        {"message": {"type": "object", "properties": {"role": {"type": "string"}, "content": {"type": "string"}}}}
        if kind == "chat"
        else {"text": {"type": "string"}}
    )
    return {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "object": {"type": "string"},
            "created": {"type": "integer"},
            "model": {"type": "string"},
            "choices": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "index": {"type": "integer"},
                        **choice,
                        "logprobs": CHAT_LOGPROBS_SCHEMA if kind == "chat" else COMPLETION_LOGPROBS_SCHEMA,
                        "finish_reason": {"type": "string", "enum": ["stop", "length"]},
                    },
                },
            },
            "usage": USAGE_SCHEMA,
            "eqlm": EQLM_SCHEMA,
        },
    }


# --- the reference page ---------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def openapi_schema() -> dict:
    """The same document /api/schema/ serves (generated once per process)."""
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def _resolve(schema: dict, node: dict) -> dict:
    if "$ref" in node:
        return _resolve(schema, schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]])
    if "allOf" in node and len(node["allOf"]) == 1:
        merged = {**_resolve(schema, node["allOf"][0]), **{k: v for k, v in node.items() if k != "allOf"}}
        return merged
    return node


def type_label(schema: dict, node: dict) -> str:
    node = _resolve(schema, node)
    if "oneOf" in node:
        return " | ".join(type_label(schema, option) for option in node["oneOf"])
    if node.get("type") == "array":
        return f"array of {type_label(schema, node.get('items', {}))}"
    if "enum" in node:
        return " | ".join(f'"{value}"' for value in node["enum"] if value is not None)
    return node.get("type", "object")


def range_label(node: dict) -> str:
    low, high = node.get("minimum"), node.get("maximum")
    if node.get("maxItems"):
        return f"at most {node['maxItems']} items"
    if low is None and high is None:
        return ""
    if high is not None and high >= 2**62:
        high = None
    if node.get("exclusiveMinimum") is True and low is not None:
        return f"> {low:g}" + (f" and ≤ {high:g}" if high is not None else "")
    if low is not None and high is not None:
        return f"{low:g} – {high:g}"
    return f"≥ {low:g}" if low is not None else f"≤ {high:g}"


def request_fields(schema: dict, ref: dict) -> list[dict]:
    body = _resolve(schema, ref)
    required = set(body.get("required", []))
    rows = []
    for name, raw in body.get("properties", {}).items():
        node = _resolve(schema, raw)
        description = node.get("description", "").split("\n\n*", 1)[0]  # drop spectacular's enum bullet list
        rows.append(
            {
                "name": name,
                "type": type_label(schema, raw),
                "range": range_label(node),
                "default": node.get("default"),
                "has_default": "default" in node,
                "required": name in required,
                "description": description,
                "eqlm": name in EQLM_FIELDS,
            }
        )
    rows.sort(key=lambda row: (not row["required"], row["eqlm"]))
    return rows


def v1_operations() -> list[dict]:
    """Every /v1 operation in the schema: method, path, summary, request fields and documented statuses."""
    schema = openapi_schema()
    order = ["/v1/models", "/v1/models/{model_id}", "/v1/completions", "/v1/chat/completions"]
    operations = []
    for path, methods in schema["paths"].items():
        if not path.startswith("/v1/"):
            continue
        for method, operation in methods.items():
            content = operation.get("requestBody", {}).get("content", {})
            body = content.get("application/json", {}).get("schema")
            operations.append(
                {
                    "method": method.upper(),
                    "path": path,
                    "id": operation.get("operationId", ""),
                    "summary": operation.get("summary", ""),
                    "description": operation.get("description", ""),
                    "fields": request_fields(schema, body) if body else [],
                    "statuses": sorted(operation.get("responses", {}).items()),
                }
            )
    operations.sort(key=lambda op: (order.index(op["path"]) if op["path"] in order else len(order), op["path"]))
    return operations


def other_operations() -> list[dict]:
    """The portal's own JSON API (/api/...), listed from the same schema."""
    schema = openapi_schema()
    rows = []
    for path, methods in schema["paths"].items():
        if path.startswith("/v1/"):
            continue
        for method, operation in methods.items():
            rows.append({"method": method.upper(), "path": path, "summary": operation.get("summary", "")})
    return rows


def examples(base_url: str) -> dict[str, str]:
    """Copy-and-run examples against this server (base_url ends with /v1)."""
    return {
        "curl_models": f'curl -s {base_url}/models -H "Authorization: Bearer $EQLM_API_KEY"',
        "curl_completion": (
            f"curl -s {base_url}/completions \\\n"
            "  -H \"Authorization: Bearer $EQLM_API_KEY\" -H 'Content-Type: application/json' \\\n"
            '  -d \'{"model": "eqlm-demo", "prompt": "In the beginning", "max_tokens": 48,\n'
            '       "temperature": 0, "depth": 12}\''
        ),
        "curl_stream": (
            f"curl -sN {base_url}/chat/completions \\\n"
            "  -H \"Authorization: Bearer $EQLM_API_KEY\" -H 'Content-Type: application/json' \\\n"
            '  -d \'{"model": "eqlm-demo", "messages": [{"role": "user", "content": "And God said"}],\n'
            '       "max_tokens": 48, "stream": true, "stream_options": {"include_usage": true},\n'
            '       "tol": 0.01, "depth": 16, "warm_start": true}\''
        ),
        "curl_score": (
            f"curl -s {base_url}/completions \\\n"
            "  -H \"Authorization: Bearer $EQLM_API_KEY\" -H 'Content-Type: application/json' \\\n"
            '  -d \'{"model": "eqlm-demo@depth=12", "prompt": "In the beginning God", "max_tokens": 0,\n'
            '       "echo": true, "logprobs": 2}\''
        ),
        "curl_tokenize": (
            f"curl -s {base_url.removesuffix('/v1')}/tokenize \\\n"
            "  -H \"Authorization: Bearer $EQLM_API_KEY\" -H 'Content-Type: application/json' \\\n"
            '  -d \'{"prompt": "Café", "return_token_strs": true}\''
        ),
        "lm_eval": (
            "cd inference/tests/fixtures/lmeval  # the tasks' data files are read relative to it\n"
            "OPENAI_API_KEY=$EQLM_API_KEY ../../../../.venv-lmeval/bin/lm_eval run --model local-completions \\\n"
            f"  --model_args model=eqlm-demo@depth=12,base_url={base_url}/completions,"
            "tokenizer_backend=remote,max_length=256,auth_token=$EQLM_API_KEY \\\n"
            "  --tasks eqlm_blimp_mini,eqlm_heldout_rolling --include_path . --log_samples --output_path /tmp/lm-eval"
        ),
        "python": (
            "import os\n"
            "from openai import OpenAI\n\n"
            f'client = OpenAI(base_url="{base_url}", api_key=os.environ.get("EQLM_API_KEY", "none"), max_retries=0)\n\n'
            "for depth in (4, 12):\n"
            "    completion = client.completions.create(\n"
            '        model="eqlm-demo", prompt="In the beginning", max_tokens=32, temperature=0,\n'
            '        extra_body={"depth": depth},\n'
            "    )\n"
            '    eqlm = completion.model_extra["eqlm"]\n'
            '    print(depth, eqlm["mean_iterations"], repr(completion.choices[0].text))\n\n'
            "stream = client.chat.completions.create(\n"
            '    model="eqlm-demo", messages=[{"role": "user", "content": "Blessed are the"}], max_tokens=32,\n'
            '    stream=True, extra_body={"tol": 0.01, "depth": 16, "warm_start": True},\n'
            ")\n"
            "for chunk in stream:\n"
            "    if chunk.choices and chunk.choices[0].delta.content:\n"
            '        print(chunk.choices[0].delta.content, end="", flush=True)\n'
            "print()\n"
        ),
    }
