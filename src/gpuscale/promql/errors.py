"""The one error the evaluator raises: what Prometheus answers with `"status": "error"`."""

from __future__ import annotations


class PromQLError(Exception):
    """A query Prometheus would refuse (bad syntax, an unsupported function) or fail to
    evaluate (many-to-many matching, duplicate label sets); the message says which."""
