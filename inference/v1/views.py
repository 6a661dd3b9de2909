"""The OpenAI-compatible API (/v1/): models, completions and chat completions, with EqLM's own controls.

Requests follow OpenAI's wire format; `depth`, `tol`, `start`, `halt`, `warm_start` and `solver` are extra top-level
fields (the official client sends them through `extra_body`) and every response carries an `eqlm` object. Generation
runs on the ONNX generation service (eqlm.generation: onnxruntime + numpy, never torch). Validation is in
serializers.py, the request plan in plan.py, the response shapes in wire.py and the schema pieces in docs.py.
"""

import itertools
import logging
import time
import uuid

from django.http import JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from eqlm.logprobs import TextOffsets
from models_app.model_ids import base_id, is_council_id
from portal.api import error_body

from . import council, ratelimit, scoring, wire
from .base import (
    V1View,
    check_depth,
    check_served_model,
    model_created,
    model_objects,
    served_runtime,
)
from .controls import check_model_controls, precision_of, sent_controls, settle_fixed_controls
from .docs import ERROR_RESPONSES, MODEL_SCHEMA, V1_TAG, completion_response_schema
from .plan import (
    CHAT_DEFAULT_MAX_TOKENS,
    COMPLETIONS_DEFAULT_MAX_TOKENS,
    Plan,
    build_plan,
    chat_prompt,
)
from .serializers import (
    ChatCompletionRequestSerializer,
    CompletionRequestSerializer,
    merge_suffix,
    parse_suffix,
    resolve_start_and_halt,
)

log = logging.getLogger(__name__)

# --- generation: what completions and chat share; the subclasses give the shapes -------------------------------


class GenerationView(V1View):
    """Validate, plan, admit, then answer in one JSON body or as server-sent events.

    A subclass names its serializer, its id prefix and object names, and builds its plan, choices and chunks.
    """

    serializer_class: type[serializers.Serializer]
    id_prefix: str
    response_object: str
    chunk_object: str

    def plan(self, data: dict, tokenizer) -> Plan:
        """The request's plan, its prompts in `tokenizer`'s tokens (the model's)."""
        raise NotImplementedError

    prompt_param = "prompt"

    def choice(self, index: int, text: str, reason: str, logprobs=None) -> dict:
        raise NotImplementedError

    def delta(self, index: int, *, text=None, role=False, reason=None, logprobs=None) -> dict:
        raise NotImplementedError

    def opening_chunks(self, ident, created, model_id, plan: Plan, index: int, prompt: str, logprobs=None):
        """Chunks sent before a choice's first generated text (`logprobs`: the echoed prompt's, if scored)."""
        return []

    def choice_logprobs(self, plan: Plan, prompt_ids: list[int], stats, events) -> dict:
        """A whole choice's `logprobs` object."""
        raise NotImplementedError

    def token_logprobs(self, plan: Plan, event, offsets) -> dict:
        """One streamed token's `logprobs` object (offsets: the choice's running eqlm.logprobs.TextOffsets)."""
        raise NotImplementedError

    def post(self, request):
        serializer = self.serializer_class(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = merge_suffix(serializer.validated_data, request.data)
        check_served_model(data["model"], self.served_model)
        sent = sent_controls(data, request.data)
        generator, telemetry = council.serve(data, lambda model_id: served_runtime(model_id, precision_of(data)))
        check_model_controls(data["model"], sent, generator.manifest)  # an explicit transformer's 400s
        data = settle_fixed_controls(resolve_start_and_halt(data), generator.manifest)
        check_depth(data["model"], data.get("depth"), generator.max_depth)
        if data.get("depth") is None and data.get("tol") is None:
            data["depth"] = generator.default_depth  # fixed depth by default, at the model's own default
        plan = self.plan(data, generator.tokenizer)
        plan.model = data["model"]  # responses echo the id as sent, suffix included
        if plan.scoring:
            lengths = [len(ids) for ids in plan.prompt_ids]
            unit = scoring.token_unit(generator.tokenizer)
            scoring.check_scoring_context(lengths, generator.max_positions, self.prompt_param, unit)
        choices = len(plan.prompts) * plan.n
        reserve = sum(len(ids) for ids in plan.prompt_ids) * plan.n + plan.max_tokens * choices
        ratelimit.admit(self.caller, reserve)
        slot = ratelimit.acquire_generation_slot()
        ident = f"{self.id_prefix}-{uuid.uuid4().hex[:24]}"
        created = int(time.time())
        if plan.stream:
            response = StreamingHttpResponse(
                self.stream_events(generator, telemetry, plan, slot, ident, created), content_type="text/event-stream"
            )
            response["Cache-Control"] = "no-cache"
            response["X-Accel-Buffering"] = "no"
            return response
        try:
            body = self.complete(generator, telemetry, plan, ident, created)
        finally:
            slot.release()
        return Response(body)

    # -- one JSON answer
    def complete(self, generator, telemetry: council.Telemetry, plan: Plan, ident: str, created: int) -> dict:
        choices, all_iterations, prompt_tokens, completion_tokens, residual = [], [], 0, 0, None
        per_choice, all_entries = [], []
        try:
            for index, prompt, req in plan.requests():
                result = generator.generate(req)
                iterations = [event.iterations for event in result.tokens]
                all_iterations += iterations
                prompt_tokens += result.prompt_tokens
                completion_tokens += result.completion_tokens
                residual = result.final_residual
                text = (prompt + result.text) if plan.echo else result.text
                logprobs = None
                if plan.logprobs is not None:
                    logprobs = self.choice_logprobs(plan, list(req.ids()), result.stats, result.tokens)
                choices.append(self.choice(index, text, result.finish_reason, logprobs))
                entries = telemetry.result_entries(result, index)
                all_entries += entries
                own = wire.eqlm_summary(plan, iterations, result.final_residual, req)
                per_choice.append(telemetry.add_to_summary(own, entries))
        finally:
            ratelimit.charge_tokens(self.caller, prompt_tokens + completion_tokens)
        summary = telemetry.add_to_summary(wire.eqlm_summary(plan, all_iterations, residual), all_entries)
        if len(per_choice) > 1:
            for choice, own in zip(choices, per_choice, strict=True):
                choice["eqlm"] = own
        usage = wire.usage(prompt_tokens, completion_tokens)
        return wire.response_body(ident, self.response_object, created, plan.model, choices, usage, summary)

    # -- server-sent events
    def chunk(
        self, ident, created, model_id, plan, index, *, text=None, role=False, reason=None, eqlm=None, logprobs=None
    ):
        choice = self.delta(index, text=text, role=role, reason=reason, logprobs=logprobs)
        return wire.sse(wire.chunk_body(ident, self.chunk_object, created, model_id, choice, plan, eqlm))

    def stream_events(self, generator, telemetry: council.Telemetry, plan: Plan, slot, ident: str, created: int):
        prompt_tokens = completion_tokens = 0
        all_iterations: list[int] = []
        all_entries: list[dict] = []
        stream = None
        try:
            for index, prompt, req in plan.requests():
                stream = generator.stream(req)
                followed = telemetry.follow(stream)
                events, first, echo_logprobs = iter(stream), [], None
                offsets = TextOffsets(plan.tokenizer)  # where each token starts in the choice's text
                if plan.echo and plan.logprobs is not None:  # the prompt's scores exist once its solve has run
                    first = list(itertools.islice(events, 1))
                    rows = stream.stats.prompt_logprobs
                    echo_logprobs = scoring.prompt_logprobs(req.ids(), rows, plan.logprobs, plan.tokenizer, offsets)
                yield from self.opening_chunks(ident, created, plan.model, plan, index, prompt, echo_logprobs)
                prompt_tokens += len(req.ids())
                iterations, residual = [], None
                for event in itertools.chain(first, events):
                    extra = followed.on_event(event)  # None unless the council answers
                    if plan.logprobs is not None:  # every token, even a byte that completes no character yet
                        logprobs = self.token_logprobs(plan, event, offsets)
                        yield self.chunk(
                            ident, created, plan.model, plan, index, text=event.text, eqlm=extra, logprobs=logprobs
                        )
                    elif event.text:
                        yield self.chunk(ident, created, plan.model, plan, index, text=event.text, eqlm=extra)
                    iterations.append(event.iterations)
                    residual = event.residual
                completion_tokens += len(iterations)
                all_iterations += iterations
                reason = stream.finish_reason
                own = followed.close(wire.eqlm_summary(plan, iterations, residual, req))
                all_entries += followed.entries
                yield self.chunk(ident, created, plan.model, plan, index, reason=reason, eqlm=own)
            if plan.include_usage:
                usage = wire.usage(prompt_tokens, completion_tokens)
                summary = telemetry.label(wire.eqlm_summary(plan, all_iterations, residual), all_entries)
                yield wire.sse(wire.usage_chunk(ident, self.chunk_object, created, plan.model, usage, summary))
            yield wire.sse("[DONE]")
        except Exception as exc:
            log.exception("generation failed mid-stream")
            yield wire.sse(error_body(f"Generation failed: {exc}", 500, code="generation_failed"))
            yield wire.sse("[DONE]")
        finally:
            if stream is not None:  # a client that went away: its generation leaves the batch now
                stream.close()
            slot.release()
            ratelimit.charge_tokens(self.caller, prompt_tokens + completion_tokens)


# --- the endpoints ----------------------------------------------------------------------------------------------


class ModelListView(V1View):
    @extend_schema(
        operation_id="v1_models_list",
        tags=[V1_TAG],
        summary="List the models",
        responses={
            200: {
                "type": "object",
                "properties": {"object": {"type": "string"}, "data": {"type": "array", "items": MODEL_SCHEMA}},
            },
            401: ERROR_RESPONSES[401],
        },
    )  # fmt: skip
    def get(self, request):
        ratelimit.admit(self.caller, 0)
        models = [*model_objects(), council.model_object(model_created())]
        return Response({"object": "list", "data": models})


class ModelDetailView(V1View):
    @extend_schema(
        operation_id="v1_models_retrieve",
        tags=[V1_TAG],
        summary="One model",
        responses={200: MODEL_SCHEMA, 404: ERROR_RESPONSES[404]},
    )
    def get(self, request, model_id: str):
        ratelimit.admit(self.caller, 0)
        if is_council_id(model_id):
            controls = parse_suffix(model_id)  # 400 for a bad suffix
            council.check_controls(controls)
            check_depth(model_id, controls.get("depth"), council.default_max_depth())
            return Response({**council.model_object(model_created()), "id": model_id})
        base = base_id(model_id)
        runtime = served_runtime(base)  # 404 for an unknown id, 503 when its files cannot be loaded
        controls = parse_suffix(model_id)  # 400 for a bad suffix, or one its model does not take
        check_model_controls(model_id, controls, runtime.manifest)
        check_depth(model_id, controls.get("depth"), runtime.max_depth)
        found = next(m for m in model_objects() if m["id"] == base)
        return Response({**found, "id": model_id})  # a suffixed id is echoed as sent


class CompletionView(GenerationView):
    serializer_class = CompletionRequestSerializer
    id_prefix = "cmpl"
    response_object = "text_completion"
    chunk_object = "text_completion"

    def plan(self, data, tokenizer):
        return build_plan(data, data["prompt"], COMPLETIONS_DEFAULT_MAX_TOKENS, "prompt", tokenizer)

    def choice(self, index, text, reason, logprobs=None):
        return wire.text_choice(index, text, reason, logprobs)

    def delta(self, index, *, text=None, role=False, reason=None, logprobs=None):
        return wire.text_delta(index, text=text, reason=reason, logprobs=logprobs)

    def opening_chunks(self, ident, created, model_id, plan, index, prompt, logprobs=None):
        """With echo, the prompt (with logprobs: its tokens' scores) comes back as the choice's first chunk."""
        if not plan.echo:
            return []
        return [self.chunk(ident, created, model_id, plan, index, text=prompt, logprobs=logprobs)]

    def choice_logprobs(self, plan, prompt_ids, stats, events):
        return scoring.completion_choice_logprobs(prompt_ids, stats, events, plan.logprobs, plan.echo, plan.tokenizer)

    def token_logprobs(self, plan, event, offsets):
        return scoring.events_logprobs([event], plan.logprobs, 0, plan.tokenizer, offsets)

    @extend_schema(
        operation_id="v1_completions_create",
        tags=[V1_TAG],
        summary="Continue a prompt",
        description="OpenAI's legacy completions. With stream: true the answer is text/event-stream.",
        request=CompletionRequestSerializer,
        responses={200: completion_response_schema("completion"), **ERROR_RESPONSES},
        examples=[
            OpenApiExample(
                "Depth 12, greedy",
                value={
                    "model": "eqlm-demo",
                    "prompt": "In the beginning",
                    "max_tokens": 32,
                    "temperature": 0,
                    "depth": 12,
                },
                request_only=True,
            )  # fmt: skip
        ],
    )
    def post(self, request):
        return super().post(request)


class ChatCompletionView(GenerationView):
    serializer_class = ChatCompletionRequestSerializer
    id_prefix = "chatcmpl"
    response_object = "chat.completion"
    chunk_object = "chat.completion.chunk"

    def plan(self, data, tokenizer):
        return build_plan(data, [chat_prompt(data["messages"])], CHAT_DEFAULT_MAX_TOKENS, "messages", tokenizer)

    prompt_param = "messages"

    def choice(self, index, text, reason, logprobs=None):
        return wire.chat_choice(index, text, reason, logprobs)

    def delta(self, index, *, text=None, role=False, reason=None, logprobs=None):
        return wire.chat_delta(index, text=text, role=role, reason=reason, logprobs=logprobs)

    def opening_chunks(self, ident, created, model_id, plan, index, prompt, logprobs=None):
        """Every chat choice opens with the assistant role (OpenAI's first delta)."""
        return [self.chunk(ident, created, model_id, plan, index, role=True)]

    def choice_logprobs(self, plan, prompt_ids, stats, events):
        return scoring.chat_choice_logprobs(events, plan.logprobs, plan.tokenizer)

    def token_logprobs(self, plan, event, offsets):
        return scoring.chat_choice_logprobs([event], plan.logprobs, plan.tokenizer)

    @extend_schema(
        operation_id="v1_chat_completions_create",
        tags=[V1_TAG],
        summary="Answer a conversation",
        description="The demo model is not instruction-tuned: message contents are joined into plain text to "
        "continue. With stream: true the answer is text/event-stream.",
        request=ChatCompletionRequestSerializer,
        responses={200: completion_response_schema("chat"), **ERROR_RESPONSES},
    )
    def post(self, request):
        return super().post(request)


@csrf_exempt
def not_found(request, *args, **kwargs):
    """Any other /v1/ path: a 404 in the API's error shape, not the HTML page."""
    body = error_body(f"Unknown API route: {request.method} {request.path}", 404, code="unknown_url")
    return JsonResponse(body, status=404)
