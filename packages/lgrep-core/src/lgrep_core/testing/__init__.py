"""Test fakes shared by every package."""

from lgrep_core.testing.fakes import FakeEmbedder, FakeRemoteEmbedder

__all__ = ["FakeEmbedder", "FakeRemoteEmbedder"]
