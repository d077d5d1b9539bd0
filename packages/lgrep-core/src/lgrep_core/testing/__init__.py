"""Test fakes shared by every package."""

from lgrep_core.testing.fakes import FakeEmbedder

__all__ = ["FakeEmbedder"]
