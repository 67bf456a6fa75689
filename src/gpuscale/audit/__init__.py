"""`gpuscale audit` and `gpuscale diagnose`: read manifests or a cluster snapshot, report traps.

Belongs here: safe loading with source positions (`loader`), the rule registry (`rules/`, one
module per rule), running and rendering findings, and the Pending-pod diagnosis (`diagnose/`).
Must not import the simulator (engine, layers): auditing needs no simulation. No writes; the
only network access is the optional read-only `cluster` reader, used by the CLI on request.
"""

from gpuscale.audit.engine import audit_objects, exit_code, select_rules
from gpuscale.audit.loader import DEFAULT_MAX_BYTES, Manifest, load_inputs, parse_text
from gpuscale.audit.model import Finding, Rule, Severity

__all__ = ["DEFAULT_MAX_BYTES", "Finding", "Manifest", "Rule", "Severity", "audit_objects",
           "exit_code", "load_inputs", "parse_text", "select_rules"]
