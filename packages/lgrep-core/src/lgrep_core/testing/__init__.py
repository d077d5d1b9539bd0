"""Test fakes shared by every package."""
