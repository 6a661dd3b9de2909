"""A property-based client for the JSON API: every operation in /api/schema/, driven by Hypothesis.

For each operation it draws requests from the OpenAPI schema (valid-looking values, documented examples with
one field mutated, wrong types, junk bytes for uploads) and checks two properties of every answer: never a 5xx,
and every 4xx in the documented error shape `{"error": {"message", "type", "param", "code"}}`.
Used by tests/test_schema_fuzz.py (a few examples per operation) and scripts/reliability.py (many).
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from urllib.parse import quote

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ERROR_KEYS = {"message", "type", "param", "code"}
SAFE_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=24)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=True, allow_infinity=True),
    SAFE_TEXT,
)
ANY_JSON = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(SAFE_TEXT, inner, max_size=4), max_leaves=12
)


@dataclass
class Operation:
    method: str
    path: str
    spec: dict
    components: dict

    @property
    def name(self) -> str:
        return f"{self.method.upper()} {self.path}"

    @property
    def body_content(self) -> tuple[str | None, dict]:
        content = self.spec.get("requestBody", {}).get("content", {})
        for media in ("application/json", "multipart/form-data"):
            if media in content:
                return media, content[media]
        return None, {}


@dataclass
class Outcome:
    operation: str
    tried: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


def operations(schema: dict) -> list[Operation]:
    components = schema.get("components", {}).get("schemas", {})
    found = []
    for path, methods in schema["paths"].items():
        for method, spec in methods.items():
            if method in ("get", "post", "put", "patch", "delete"):
                found.append(Operation(method, path, spec, components))
    return found


def schema_operations() -> list[Operation]:
    """Every operation of the portal's public OpenAPI schema (/api/schema/)."""
    from drf_spectacular.generators import SchemaGenerator

    return operations(SchemaGenerator().get_schema(request=None, public=True))


def client_for(op: Operation, anonymous, staff):
    """Who sends an operation's generated requests: staff for the portal's writes, a visitor for reads and /v1/."""
    return staff if op.method != "get" and not op.path.startswith("/v1/") else anonymous


def resolve(schema: dict, components: dict) -> dict:
    while "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[1]]
    return schema


def from_schema(schema: dict, components: dict, depth: int = 0) -> st.SearchStrategy:
    """Values that mostly fit the schema (with its boundaries), sometimes anything at all."""
    schema = resolve(schema, components)
    if "allOf" in schema:
        return from_schema(schema["allOf"][0], components, depth)
    if "oneOf" in schema or "anyOf" in schema:
        options = schema.get("oneOf") or schema.get("anyOf")
        return st.one_of([from_schema(option, components, depth + 1) for option in options])
    kind = schema.get("type")
    if "enum" in schema:
        fitting = st.sampled_from([value for value in schema["enum"] if value is not None] or [None])
    elif kind == "integer":
        low, high = schema.get("minimum", -5), schema.get("maximum", 10_000)
        fitting = st.integers(min_value=int(low) - 2, max_value=int(high) + 2) | st.sampled_from([0, 1, 2, 4, 8])
    elif kind == "number":
        fitting = st.floats(min_value=-10, max_value=1000, allow_nan=False) | st.sampled_from([0.0, 0.5, 1.0])
    elif kind == "boolean":
        fitting = st.booleans()
    elif kind == "string":
        fitting = SAFE_TEXT | st.sampled_from(["", "eqlm-demo", "In the beginning", "x" * 300])
    elif kind == "array":
        item = from_schema(schema.get("items", {}), components, depth + 1) if depth < 3 else SCALARS
        fitting = st.lists(item, max_size=4)
    elif kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        if not properties or depth >= 3:
            fitting = st.dictionaries(SAFE_TEXT, SCALARS, max_size=4)
        else:
            required = [key for key in schema.get("required", []) if key in properties]
            optional = [key for key in properties if key not in required and not properties[key].get("readOnly")]
            fitting = st.fixed_dictionaries(
                {key: from_schema(properties[key], components, depth + 1) for key in required},
                optional={key: from_schema(properties[key], components, depth + 1) for key in optional},
            )
    else:
        fitting = ANY_JSON
    return st.one_of(fitting, fitting, fitting, ANY_JSON) if depth else st.one_of(fitting, fitting, ANY_JSON)


def mutated(example, strategy_for_leaf=ANY_JSON) -> st.SearchStrategy:
    """A documented example with one value (at any depth) replaced, removed, or left alone."""

    @st.composite
    def build(draw):
        value = json.loads(json.dumps(example))
        paths = []

        def walk(node, trail):
            if isinstance(node, dict):
                for key, child in node.items():
                    paths.append((*trail, key))
                    walk(child, (*trail, key))
            elif isinstance(node, list):
                for index, child in enumerate(node):
                    paths.append((*trail, index))
                    walk(child, (*trail, index))

        walk(value, ())
        if not paths or draw(st.integers(0, 5)) == 0:
            return value
        target = draw(st.sampled_from(paths))
        parent = value
        for step in target[:-1]:
            parent = parent[step]
        if isinstance(parent, dict) and draw(st.booleans()):
            parent.pop(target[-1])
        else:
            parent[target[-1]] = draw(strategy_for_leaf)
        return value

    return build()


def parameter_strategy(parameter: dict, components: dict, hints: dict) -> st.SearchStrategy:
    known = hints.get(parameter["name"], [])
    schema = parameter.get("schema", {"type": "string"})
    drawn = from_schema(schema, components, depth=1).map(lambda v: v if isinstance(v, str) else json.dumps(v))
    return st.one_of(st.sampled_from(known), st.sampled_from(known), drawn) if known else drawn


def request_strategy(op: Operation, hints: dict) -> st.SearchStrategy:
    params = op.spec.get("parameters", [])
    path_params = {p["name"]: parameter_strategy(p, op.components, hints) for p in params if p["in"] == "path"}
    query_params = {p["name"]: parameter_strategy(p, op.components, hints) for p in params if p["in"] == "query"}
    media, content = op.body_content
    if media == "application/json":
        body_schema = resolve(content.get("schema", {}), op.components)
        examples = [example["value"] for example in content.get("examples", {}).values() if "value" in example]
        options = [from_schema(body_schema, op.components)]
        options += [mutated(example) for example in examples for _ in range(3)]
        options += [mutated(value) for value in hints.get(f"{op.name} body", [])]
        body = st.one_of(options)
    elif media == "multipart/form-data":
        body = multipart_strategy(resolve(content.get("schema", {}), op.components), op.components, hints)
    else:
        body = st.none()
    return st.fixed_dictionaries(
        {"path": st.fixed_dictionaries(path_params), "body": body},
        optional={
            "query": st.fixed_dictionaries({}, optional=query_params),
            "extra": st.dictionaries(
                st.sampled_from(["page", "format", "limit", "offset", "x"]), SAFE_TEXT, max_size=1
            ),
        },
    )


def multipart_strategy(schema: dict, components: dict, hints: dict) -> st.SearchStrategy:
    samples = hints.get("upload samples", [b"{}"])
    file_bytes = st.one_of(
        st.binary(max_size=2048),
        st.sampled_from(samples),
        st.sampled_from(samples).flatmap(
            lambda sample: st.integers(0, max(0, len(sample) - 1)).map(lambda cut: sample[:cut])
        ),
    )
    fields = {}
    for name, prop in schema.get("properties", {}).items():
        prop = resolve(prop, components)
        is_file = prop.get("format") == "binary" or resolve(prop.get("items", {}), components).get("format") == "binary"
        if is_file:
            fields[name] = st.lists(file_bytes, min_size=0, max_size=3).map(lambda blobs: ("file", blobs))
        else:
            fields[name] = from_schema(prop, components, depth=1).map(lambda v: ("text", v))
    return st.fixed_dictionaries({}, optional=fields)


def send(client, op: Operation, request: dict):
    path = op.path
    for name, value in request["path"].items():
        path = path.replace("{" + name + "}", quote(str(value), safe="") or "%20")
    query = {**request.get("extra", {}), **request.get("query", {})}
    media, _ = op.body_content
    if op.method == "get":
        return client.get(path, query)
    if media == "multipart/form-data":
        data = {}
        for name, (kind, value) in (request["body"] or {}).items():
            if kind == "file":
                blobs = []
                for index, blob in enumerate(value):
                    handle = io.BytesIO(blob)
                    handle.name = f"fuzz{index}.json"
                    blobs.append(handle)
                data[name] = blobs
            elif isinstance(value, list):
                data[name] = [str(item) for item in value]
            elif value is not None:
                data[name] = str(value)
        return client.post(path + _query_string(query), data)
    body = json.dumps(request["body"], allow_nan=True)  # NaN/Infinity literals are hostile input too
    return client.post(path + _query_string(query), body, content_type="application/json")


def _query_string(query: dict) -> str:
    from urllib.parse import urlencode

    return ("?" + urlencode(query)) if query else ""


def problem_with(response) -> str | None:
    """None when the answer keeps the API's promises, else what broke."""
    status = response.status_code
    if status >= 500:
        return f"answered {status}"
    if status < 400:
        if getattr(response, "streaming", False):
            b"".join(response.streaming_content)  # a stream must run to its end without raising
        return None
    try:
        body = json.loads(response.content)
    except ValueError:
        return f"{status} with a body that is not JSON: {response.content[:120]!r}"
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or not set(error) >= ERROR_KEYS:
        return f"{status} without the error shape: {str(body)[:200]}"
    if not isinstance(error["message"], str) or not error["message"] or not isinstance(error["type"], str):
        return f"{status} with an empty message or type: {error}"
    return None


def fuzz_operation(op: Operation, client, hints: dict, max_examples: int, seed: int = 0) -> Outcome:
    outcome = Outcome(op.name)

    @settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        derandomize=seed == 0,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(st.data())
    def check(data):
        request = data.draw(request_strategy(op, hints), label="request")
        response = send(client, op, request)
        outcome.tried += 1
        outcome.statuses[response.status_code] = outcome.statuses.get(response.status_code, 0) + 1
        problem = problem_with(response)
        if problem:
            raise AssertionError(f"{op.name}: {problem}; request {_short(request)}")

    try:
        check()
    except AssertionError as exc:
        outcome.failures.append(str(exc).splitlines()[0][:600])
    return outcome


def _short(request: dict) -> str:
    def default(value):
        return repr(value)[:80]

    text = json.dumps(request, default=default)
    return text if len(text) < 400 else text[:400] + "…"


def portal_hints() -> dict:
    """Real identifiers from the database so that drawn requests also reach the success paths."""
    from benchmarks_app.models import Comparison
    from findings_app.models import Finding
    from lab_app.models import LabRun
    from results.models import ResultRow, SourceFile

    comparisons = list(Comparison.objects.values_list("slug", flat=True)[:10])
    sides = [
        (f"{c.treatment_experiment}:{c.treatment_arm}", f"{c.baseline_experiment}:{c.baseline_arm}", c.metric)
        for c in Comparison.objects.filter(kind="ratio").exclude(treatment_arm="").exclude(baseline_arm="")[:5]
    ]
    metrics = list(ResultRow.objects.values_list("metric", flat=True).distinct()[:5])
    return {
        "slug": comparisons or ["ratio"],
        "code": list(Finding.objects.values_list("code", flat=True)[:10]) or ["F1"],
        "id": [
            str(pk)
            for pk in [
                *SourceFile.objects.values_list("pk", flat=True)[:3],
                *LabRun.objects.values_list("pk", flat=True)[:3],
            ]
        ]
        or ["1"],  # fmt: skip
        "model_id": ["eqlm-demo"],
        "metric": [s[2] for s in sides] + metrics or ["blimp_accuracy"],
        "treatment": [s[0] for s in sides] or ["exp13_contraction_at_width:C1"],
        "baseline": [s[1] for s in sides] or ["exp13_contraction_at_width:C0"],
        "resamples": ["200", "1000"],
        "interval": ["bootstrap", "t"],
        "upload samples": [json.dumps({"experiment": "exp13_contraction_at_width", "seed": 1, "arms": {}}).encode()],
        "POST /v1/completions body": [{"model": "eqlm-demo", "prompt": "In the beginning", "max_tokens": 4}],
        "POST /v1/chat/completions body": [
            {"model": "eqlm-demo", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 4},
            {"model": "eqlm-demo", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3, "stream": True},
        ],
    }
