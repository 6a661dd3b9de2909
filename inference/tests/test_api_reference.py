"""The /api/ reference page is read from the OpenAPI schema: every /v1 endpoint and parameter, with ranges."""

import pytest

from .page_examples import run_shell_example

pytestmark = pytest.mark.django_db


@pytest.fixture
def served_model(serve_models, tiny_onnx_dir):
    serve_models(default=tiny_onnx_dir)


@pytest.fixture
def schema(client):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    return response.json()


def test_the_schema_documents_every_v1_route_with_eqlm_controls(schema):
    assert {"/v1/models", "/v1/models/{model_id}", "/v1/completions", "/v1/chat/completions"} <= set(schema["paths"])
    body = schema["components"]["schemas"]["CompletionRequest"]["properties"]
    assert body["depth"]["minimum"] == 1 and body["depth"]["maximum"] == 128  # a model's own cap is at most 128
    assert {"tol", "start", "halt", "warm_start", "solver", "prompt", "max_tokens", "stream"} <= set(body)
    enums = {name: schema["components"]["schemas"][f"Eqlm{name.title()}Enum"]["enum"] for name in ("start", "halt")}
    assert enums == {"start": ["zero", "warm", "noise"], "halt": ["residual", "kl"]}
    chat = schema["components"]["schemas"]["ChatCompletionRequest"]["properties"]
    assert {"messages", "max_completion_tokens", "depth"} <= set(chat)
    assert schema["components"]["securitySchemes"]["ApiKeyBearer"]["scheme"] == "bearer"


def test_the_reference_page_lists_every_v1_endpoint_and_parameter_of_the_schema(client, schema):
    page = client.get("/api/").content.decode()
    for path, methods in schema["paths"].items():
        if not path.startswith("/v1/"):
            continue
        for method, operation in methods.items():
            assert f"{method.upper()} {path}" in page
            ref = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            if ref:
                name = ref["$ref"].rsplit("/", 1)[1]
                for field in schema["components"]["schemas"][name]["properties"]:
                    assert f'data-param="{field}"' in page, f"{path}: {field} missing from /api/"
    assert "1 – 128" in page  # depth's range, as the schema states it (each model's own cap is in /v1/models)
    assert "curl -s http://testserver/v1/completions" in page and "from openai import OpenAI" in page


def test_the_python_example_on_the_page_runs_against_the_server(client, live_server, served_model):
    """Execute the page's openai-client example verbatim (base URL swapped for the live server)."""
    import contextlib
    import html
    import io
    import re

    page = client.get("/api/").content.decode()
    code = html.unescape(re.search(r'<code id="python-example">(.*?)</code>', page, re.S).group(1))
    code = code.replace("http://testserver/v1", f"{live_server.url}/v1")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "api-reference-example", "exec"), {})  # our own page's example
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("4 4.0 ") and lines[1].startswith("12 12.0 ")


def test_the_curl_examples_on_the_page_run_against_the_server(client, live_server, served_model):
    import html
    import json
    import re

    page = client.get("/api/").content.decode()
    commands = [html.unescape(c) for c in re.findall(r"<pre><code>(curl .*?)</code></pre>", page, re.S)]
    assert len(commands) == 3
    outputs = [run_shell_example(c.replace("http://testserver/v1", f"{live_server.url}/v1")) for c in commands]
    assert json.loads(outputs[0])["data"][0]["id"] == "eqlm-demo"
    assert json.loads(outputs[1])["eqlm"]["depth_requested"] == 12
    assert outputs[2].rstrip().endswith("data: [DONE]")
