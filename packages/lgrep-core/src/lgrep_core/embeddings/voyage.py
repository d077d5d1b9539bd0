"""Voyage AI (voyage-code-3 by default) through the voyageai SDK's AsyncClient.

Documents are sent with input_type "document", queries with "query"; `output_dimension` asks
voyage-code-3 (and the voyage-3.5 family) for 256, 512, 1024 or 2048 dimensions. The SDK's own
retries are off (`max_retries=0`): `cloud.CloudEmbedder` retries, honouring Retry-After, which the
SDK's tenacity loop does not. The SDK reads no variable for its base URL; `embedding.base_url`
(LGREP_EMBEDDING_BASE_URL) sets it, for a proxy or a stand-in server.
"""

from __future__ import annotations

from typing import Any

from lgrep_core.domain.errors import ConfigError, EmbeddingError
from lgrep_core.embeddings.cloud import CloudEmbedder, Limits, MalformedReply, Reply, Verdict
from lgrep_core.embeddings.http_errors import RETRYABLE_STATUS, retry_after_s, short_body
from lgrep_core.settings.config import MODEL_DIMENSIONS, EmbeddingSettings

__all__ = ["DEFAULT_BASE_URL", "VoyageApi", "make_voyage"]

DEFAULT_BASE_URL = "https://api.voyageai.com/v1"
# Per request: at most 1,000 texts, and a total of tokens that depends on the model; per text, the
# model's context (32,000 tokens for voyage-code-3 and the voyage-3 family). docs.voyageai.com.
MAX_TEXTS = 1000
MAX_TEXT_TOKENS = 32_000
_TOTAL_TOKENS = {"voyage-3.5-lite": 1_000_000, "voyage-3-lite": 1_000_000, "voyage-3.5": 320_000, "voyage-3": 320_000}
_DEFAULT_TOTAL_TOKENS = 120_000  # voyage-code-3, voyage-3-large, and the rest
# Models that take `output_dimension`, and the values they take.
_FLEXIBLE = {"voyage-code-3", "voyage-3.5", "voyage-3.5-lite", "voyage-3-large"}
FLEXIBLE_DIMENSIONS = (256, 512, 1024, 2048)


class VoyageApi:
    provider = "voyage"

    def __init__(self, model: str, dimension: int | None, *, api_key: str, base_url: str, timeout_s: float) -> None:
        self.model = model
        self.limits = Limits(MAX_TEXTS, _TOTAL_TOKENS.get(model, _DEFAULT_TOTAL_TOKENS), MAX_TEXT_TOKENS)
        native = MODEL_DIMENSIONS.get(model)
        self._output_dimension = dimension if dimension is not None and dimension != native else None
        self._options: dict[str, Any] = {
            "api_key": api_key,
            "max_retries": 0,
            "timeout": timeout_s,
            "base_url": base_url,
        }
        self._client: Any = None  # the SDK (~1 s to import) loads at the first request, not for a plan

    async def embed(self, texts: list[str], *, query: bool) -> Reply:
        if self._client is None:
            from voyageai.client_async import AsyncClient

            self._client = AsyncClient(**self._options)
        result = await self._client.embed(
            texts,
            model=self.model,
            input_type="query" if query else "document",
            truncation=True,
            output_dimension=self._output_dimension,
        )
        try:
            vectors = list(result.embeddings)
            tokens = int(result.total_tokens)
        except (AttributeError, TypeError, ValueError) as exc:
            raise MalformedReply(f"an answer without embeddings or usage ({exc})") from None
        return Reply(vectors, tokens)  # pyright: ignore[reportArgumentType]

    def judge(self, exc: BaseException) -> Verdict:
        from voyageai import error

        status = getattr(exc, "http_status", None)
        detail = getattr(exc, "user_message", None) or short_body(getattr(exc, "http_body", "")) or str(exc)
        if isinstance(exc, MalformedReply):
            return Verdict(f"malformed answer: {exc}", retry=True)
        if isinstance(exc, error.AuthenticationError) or status in (401, 403):
            return Verdict(
                f"refused the API key ({status})",
                retry=False,
                error=ConfigError(
                    f"Voyage refused the API key (HTTP {status}: {detail}): check VOYAGE_API_KEY "
                    "(or embedding.api_key in your config file)"
                ),
            )
        if isinstance(exc, error.RateLimitError) or status == 429:
            return Verdict("rate limited (429)", retry=True, retry_after=retry_after_s(getattr(exc, "headers", None)))
        if isinstance(exc, error.Timeout):
            return Verdict("the request timed out", retry=True)
        if isinstance(exc, error.APIConnectionError):
            return Verdict(f"cannot connect ({exc.__cause__ or exc})", retry=True)
        if isinstance(exc, error.ServerError | error.ServiceUnavailableError | error.TryAgain):
            return Verdict(
                f"server error ({status})", retry=True, retry_after=retry_after_s(getattr(exc, "headers", None))
            )
        if isinstance(exc, error.InvalidRequestError | error.MalformedRequestError) or (
            status is not None and 400 <= status < 500 and status not in RETRYABLE_STATUS
        ):
            return Verdict(
                f"refused the request ({status})",
                retry=False,
                error=EmbeddingError(f"Voyage refused the request for {self.model} (HTTP {status}): {detail}"),
            )
        if isinstance(exc, error.APIError):  # a body that is not the JSON the API promises
            return Verdict(f"malformed answer (HTTP {status}): {short_body(getattr(exc, 'http_body', ''))}", retry=True)
        if status in RETRYABLE_STATUS:
            return Verdict(f"HTTP {status}", retry=True)
        return Verdict(f"malformed answer: {type(exc).__name__}: {exc}", retry=True)

    async def aclose(self) -> None:
        return None  # the SDK opens a session per request


def make_voyage(settings: EmbeddingSettings) -> CloudEmbedder:
    """Raises:
    ConfigError: no API key, or a dimension the model does not offer.
    """
    key = settings.api_key.get_secret_value() if settings.api_key is not None else ""
    if not key:
        raise ConfigError(
            "embedding.provider is voyage but VOYAGE_API_KEY is not set: export VOYAGE_API_KEY=<your key> "
            "(or set embedding.api_key in your own config file), or use the local model "
            "(embedding.provider: local)"
        )
    dimension = settings.dimensions
    native = MODEL_DIMENSIONS.get(settings.model)
    if dimension is not None and dimension != native and settings.model not in _FLEXIBLE:
        raise ConfigError(
            f"{settings.model} gives {native or 'its own number of'} dimensions; embedding.dimensions {dimension} "
            f"needs one of {', '.join(sorted(_FLEXIBLE))}"
        )
    if dimension is not None and settings.model in _FLEXIBLE and dimension not in FLEXIBLE_DIMENSIONS:
        raise ConfigError(
            f"{settings.model} gives {', '.join(map(str, FLEXIBLE_DIMENSIONS))} dimensions, not {dimension}: "
            "fix embedding.dimensions"
        )
    api = VoyageApi(
        settings.model,
        dimension,
        api_key=key,
        base_url=settings.base_url or DEFAULT_BASE_URL,
        timeout_s=settings.timeout_s,
    )
    return CloudEmbedder.configured(api, settings)
