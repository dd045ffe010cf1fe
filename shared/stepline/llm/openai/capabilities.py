"""What an OpenAI model id tells us: reasoning model or not, vision, service tiers.

Follows `@ai-sdk/openai` 4.0.46 `src/openai-language-model-capabilities.ts`: only recognisable
OpenAI families count as reasoning models (`o<N>…`, `gpt-<N≥5>…` except the `-chat` variants);
fine-tuned, third-party and custom ids keep the conservative defaults (`forceReasoning` overrides).
Pure: the standard library only (and the port's `ModelCapabilities`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..base import ModelCapabilities
from .options import CallWarning, unsupported_warning

__all__ = [
    "OpenAIModelFamily",
    "chat_capabilities",
    "model_family",
    "responses_capabilities",
    "service_tier_warning",
]

_O_SERIES = re.compile(r"^o(\d+)(?:-|$)")
_GPT = re.compile(r"^gpt-(\d+)(?:\.(\d+))?(?:-(.+))?$")
# o-series models without image input.
_TEXT_ONLY_O_SERIES = ("o1-mini", "o3-mini")


@dataclass(frozen=True, slots=True)
class OpenAIModelFamily:
    """Facts derived from an OpenAI model id.

    Attributes:
        is_reasoning_model: o-series or GPT-5+ (not `-chat`): developer messages, no sampling knobs.
        supports_non_reasoning_parameters: GPT-5.1+ accept temperature/topP with reasoning effort `none`.
        supports_flex_processing: `serviceTier: "flex"` is available.
        supports_priority_processing: `serviceTier: "priority"`/`"fast"` is available.
        supports_images: Image (and, on Responses, PDF) input.
    """

    is_reasoning_model: bool
    supports_non_reasoning_parameters: bool
    supports_flex_processing: bool
    supports_priority_processing: bool
    supports_images: bool


def model_family(model_id: str) -> OpenAIModelFamily:
    """Classify `model_id` (`gpt-5-mini`, `o3`, `gpt-4o-2024-08-06`, `llama3`, …)."""
    o_match = _O_SERIES.match(model_id)
    o_version = int(o_match.group(1)) if o_match else None
    gpt_match = _GPT.match(model_id)
    major = int(gpt_match.group(1)) if gpt_match else None
    minor = int(gpt_match.group(2)) if gpt_match and gpt_match.group(2) is not None else None
    variant = gpt_match.group(3) if gpt_match else None
    is_chat_variant = minor is None and variant is not None and variant.startswith("chat")
    is_nano = variant is not None and variant.startswith("nano")
    modern_gpt = major is not None and major >= 5
    return OpenAIModelFamily(
        is_reasoning_model=o_version is not None or (modern_gpt and not is_chat_variant),
        supports_non_reasoning_parameters=major is not None and (major > 5 or (major == 5 and (minor or 0) >= 1)),
        supports_flex_processing=(o_version is not None and o_version >= 3) or (modern_gpt and not is_chat_variant),
        supports_priority_processing=model_id.startswith("gpt-4")
        or (modern_gpt and not is_nano and not is_chat_variant)
        or (o_version is not None and o_version >= 3),
        supports_images=_supports_images(model_id, o_version, modern_gpt),
    )


def _supports_images(model_id: str, o_version: int | None, modern_gpt: bool) -> bool:
    if model_id.startswith(("gpt-4o", "gpt-4.1")) or modern_gpt:
        return True
    return o_version is not None and not model_id.startswith(_TEXT_ONLY_O_SERIES)


def responses_capabilities(model_id: str, *, force_reasoning: bool = False) -> ModelCapabilities:
    """Images and PDFs for vision models; reasoning history for reasoning models."""
    family = model_family(model_id)
    media = ("image/*", "application/pdf") if family.supports_images else ()
    return ModelCapabilities(input_media_types=media, reasoning_history=family.is_reasoning_model or force_reasoning)


def chat_capabilities(model_id: str) -> ModelCapabilities:
    """Images for vision models; Chat Completions cannot take earlier reasoning back."""
    media = ("image/*",) if model_family(model_id).supports_images else ()
    return ModelCapabilities(input_media_types=media, reasoning_history=False)


def service_tier_warning(service_tier: str | None, family: OpenAIModelFamily) -> CallWarning | None:
    """A warning (the tier is then not sent) when the model lacks the flex or priority tier."""
    if service_tier == "flex" and not family.supports_flex_processing:
        return unsupported_warning("serviceTier", "flex processing is only available for o3, o4-mini and gpt-5 models")
    if service_tier in ("priority", "fast") and not family.supports_priority_processing:
        details = "priority processing is only available for gpt-4, gpt-5 (not nano), o3 and o4-mini models"
        return unsupported_warning("serviceTier", details)
    return None
