"""OpenAI embeddings (text-embedding-3-small/large) and any OpenAI-compatible endpoint (Ollama, LM
Studio, vLLM, TEI, LiteLLM, Gemini's OpenAI-compatible API) through the openai SDK's AsyncOpenAI.

`embedding.base_url` (LGREP_EMBEDDING_BASE_URL; the SDK's own OPENAI_BASE_URL is not read, so one
variable decides for every provider) points it at another server. OPENAI_API_KEY is required for
OpenAI itself; a server of one's own often needs none, and then none is sent. The dimension of a
model lgrep does not know is detected from the first reply and every later reply is checked against
it; `dimensions` is sent only to the text-embedding-3 models, which shorten their vectors on request
(other servers differ in whether they accept it). The SDK's retries are off: `cloud.CloudEmbedder`
retries, honouring Retry-After.
"""

from __future__ import annotations

from typing import Any

from lgrep_core.domain.errors import ConfigError, EmbeddingError
from lgrep_core.embeddings.cloud import CloudEmbedder, Limits, MalformedReply, Reply, Verdict
from lgrep_core.embeddings.http_errors import RETRYABLE_STATUS, retry_after_s, short_body
from lgrep_core.embeddings.tokens import count_tokens
from lgrep_core.settings.config import MODEL_DIMENSIONS, EmbeddingSettings

__all__ = ["DEFAULT_BASE_URL", "OpenAIApi", "make_openai"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Per request: 2,048 inputs and 300,000 tokens in all; per input, 8,191 tokens (platform.openai.com).
LIMITS = Limits(max_texts=2048, max_tokens=300_000, max_text_tokens=8191)
_SHORTENABLE = ("text-embedding-3-",)
# Sent as the key when the user gave none (the SDK requires one; a local server ignores it).
_NO_KEY = "unused"


class OpenAIApi:
    provider = "openai"

    def __init__(self, model: str, dimension: int | None, *, api_key: str, base_url: str, timeout_s: float) -> None:
        self.model = model
        self.limits = LIMITS
        native = MODEL_DIMENSIONS.get(model)
        shorten = model.startswith(_SHORTENABLE) and dimension is not None and dimension != native
        self._extra: dict[str, Any] = {"dimensions": dimension} if shorten else {}
        self._options: dict[str, Any] = {
            "api_key": api_key or _NO_KEY,
            "base_url": base_url,
            "timeout": timeout_s,
            "max_retries": 0,
        }
        self._client: Any = None  # the SDK loads at the first request, not for a plan
        self._keyless = not api_key

    async def embed(self, texts: list[str], *, query: bool) -> Reply:
        if self._client is None:
            import openai

            self._client = openai.AsyncOpenAI(**self._options)
        response = await self._client.embeddings.create(
            input=texts, model=self.model, encoding_format="float", **self._extra
        )
        try:
            data = sorted(response.data, key=lambda d: d.index)
            vectors = [list(d.embedding) for d in data]
            usage = response.usage
            tokens = int(usage.total_tokens or usage.prompt_tokens or 0) if usage is not None else -1
        except (AttributeError, TypeError, ValueError) as exc:
            raise MalformedReply(f"an answer without embeddings ({exc})") from None
        if tokens < 0:  # a compatible server that reports no usage: count them as OpenAI would
            tokens = sum(count_tokens(texts))
        return Reply(vectors, tokens)  # pyright: ignore[reportArgumentType]

    def judge(self, exc: BaseException) -> Verdict:
        import openai

        status = getattr(exc, "status_code", None)
        detail = _detail(exc)
        if isinstance(exc, MalformedReply):
            return Verdict(f"malformed answer: {exc}", retry=True)
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            hint = (
                "set OPENAI_API_KEY (or embedding.api_key in your config file)"
                if self._keyless
                else "check OPENAI_API_KEY (or embedding.api_key in your config file)"
            )
            return Verdict(
                f"refused the API key ({status})",
                retry=False,
                error=ConfigError(
                    f"the OpenAI-compatible endpoint refused the API key (HTTP {status}: {detail}): {hint}"
                ),
            )
        if isinstance(exc, openai.APITimeoutError):
            return Verdict("the request timed out", retry=True)
        if isinstance(exc, openai.APIConnectionError):
            return Verdict(f"cannot connect ({exc.__cause__ or exc})", retry=True)
        if isinstance(exc, openai.APIStatusError):
            after = retry_after_s(exc.response.headers)
            if status == 429:
                return Verdict("rate limited (429)", retry=True, retry_after=after)
            if status in RETRYABLE_STATUS:
                return Verdict(f"server error ({status})", retry=True, retry_after=after)
            return Verdict(
                f"refused the request ({status})",
                retry=False,
                error=EmbeddingError(f"the endpoint refused the request for {self.model} (HTTP {status}): {detail}"),
            )
        # APIResponseValidationError, a body that is not JSON, JSON of another shape
        return Verdict(f"malformed answer: {type(exc).__name__}: {short_body(str(exc))}", retry=True)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()


def _detail(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        message = err.get("message") if isinstance(err, dict) else err  # pyright: ignore[reportUnknownMemberType]
        if message:
            return short_body(message)
    return short_body(getattr(exc, "message", None) or str(exc))


def make_openai(settings: EmbeddingSettings) -> CloudEmbedder:
    """Raises:
    ConfigError: OpenAI itself without OPENAI_API_KEY; a dimension text-embedding-3 cannot give.
    """
    key = settings.api_key.get_secret_value() if settings.api_key is not None else ""
    if not key and settings.base_url is None:
        raise ConfigError(
            "embedding.provider is openai but OPENAI_API_KEY is not set: export OPENAI_API_KEY=<your key> "
            "(or set embedding.api_key in your own config file); for an OpenAI-compatible server of your own, "
            "set embedding.base_url (LGREP_EMBEDDING_BASE_URL)"
        )
    native = MODEL_DIMENSIONS.get(settings.model)
    if (
        settings.dimensions is not None
        and native is not None
        and settings.model.startswith(_SHORTENABLE)
        and settings.dimensions > native
    ):
        raise ConfigError(f"{settings.model} gives at most {native} dimensions, not {settings.dimensions}")
    api = OpenAIApi(
        settings.model,
        settings.dimensions,
        api_key=key,
        base_url=settings.base_url or DEFAULT_BASE_URL,
        timeout_s=settings.timeout_s,
    )
    return CloudEmbedder.configured(api, settings)
