"""`vllm`: vLLM's RequestOutput objects written one a line, each output of a request one generation.

    pairstore ingest generations vllm_outs.jsonl --model so7a --format vllm --item-kind problem

A sampling script writes them with (docs/bring-your-data.md):

    for o in llm.generate(questions, params):
        f.write(json.dumps({"request_id": o.request_id, "prompt": o.prompt,
                            "outputs": [dataclasses.asdict(c) for c in o.outputs]}) + "\\n")
"""

from __future__ import annotations

from typing import Any

from pairstore.ingest.declare import ID, LABEL, META, SCORE, SETTING, TEXT, Field, Format, declare
from pairstore.ingest.messages import RenderedPrompt
from pairstore.ingest.records import Fields

# What a CompletionOutput holds besides its text and index: none of it text of its own (the decoded
# tokens inside `logprobs` are pieces of the output's own text).
OUTPUT_METADATA = {
    "token_ids",
    "cumulative_logprob",
    "logprobs",
    "finish_reason",
    "stop_reason",
    "lora_request",
}


def reshape(values: dict[str, Any], f: Fields) -> list[dict[str, Any]]:
    """One generation per output: its text, its index the sample number."""
    outputs = f.rec.get("outputs")
    if not isinstance(outputs, list) or not outputs:
        raise f.error("outputs", "expected a non-empty list of outputs (CompletionOutput objects)")
    rows = []
    for i, out in enumerate(outputs):
        if not isinstance(out, dict) or not isinstance(out.get("text"), str):
            raise f.error(f"outputs[{i}].text", "expected the output's text")
        extra = next((k for k in out if k not in ("text", "index", *OUTPUT_METADATA)), None)
        if extra is not None:
            raise f.error(f"outputs[{i}].{extra}", "holds what the vllm format does not read")
        index = out.get("index", i)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < 2**31:
            raise f.error(f"outputs[{i}].index", "expected the output's number")
        rows.append({**values, "output": out["text"], "sample_index": index})
    return rows


FORMAT = declare(
    Format(
        name="vllm",
        table="generations",
        summary="vLLM's RequestOutput objects, one a line ({request_id, prompt, outputs: [{index, text, "
        "...}]}): "
        "every output a generation, its item found by the prompt's question.",
        notes="The item kind is --item-kind (default problem); a prompt with a chat template applied is "
        "found too (the match key drops template markup), and stored as its messages.",
        fields=(
            Field(
                "prompt",
                TEXT,
                "the prompt as sent",
                role="prompt",
                kind=RenderedPrompt("prompt"),
                required=True,
            ),
            Field(
                "outputs",
                TEXT,
                "the outputs: each one's text (`outputs[].text`) is a generation",
                role="output",
            ),
            Field("request_id", ID, "vLLM's id of the request"),
            Field("prompt_token_ids", META, "the prompt's token ids"),
            Field("prompt_logprobs", META, "the prompt's log probabilities"),
            Field("encoder_prompt", META, "an encoder-decoder model's encoder prompt"),
            Field("encoder_prompt_token_ids", META, "its token ids"),
            Field("finished", LABEL, "whether the request finished"),
            Field("metrics", META, "vLLM's timings of the request"),
            Field("lora_request", META, "the LoRA adapter used"),
            Field("num_cached_tokens", SETTING, "prompt tokens served from the cache"),
            Field("kv_transfer_params", META, "vLLM's KV-cache transfer settings"),
            Field("outputs[].index", SETTING, "the output's number (`sample_index`)"),
            Field("outputs[].cumulative_logprob", SCORE, "the output's log probability"),
            Field("outputs[].finish_reason", LABEL, "why generation stopped"),
        ),
        signature=("prompt", "outputs"),
        reshape=reshape,
        order=10,
        extra={"item_kind": "problem"},
    )
)
