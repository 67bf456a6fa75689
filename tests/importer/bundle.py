"""The example bundle as editable data: load examples/my-cluster/manifests, change a field,
write the result to a temporary folder."""

from __future__ import annotations

from pathlib import Path

import yaml

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "my-cluster"
MANIFESTS = EXAMPLE / "manifests"
CATALOG = EXAMPLE / "catalog.yaml"
TRACE = EXAMPLE / "trace.csv"


def load_docs() -> list[dict]:
    docs = []
    for path in sorted(MANIFESTS.glob("*.yaml")):
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


def of_kind(docs: list[dict], kind: str) -> dict:
    return next(d for d in docs if d["kind"] == kind)


def write_bundle(folder: Path, docs: list[dict], name: str = "bundle") -> Path:
    out = folder / name
    out.mkdir(parents=True, exist_ok=True)
    (out / "all.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return out


def container(docs: list[dict], kind: str = "Deployment") -> dict:
    doc = of_kind(docs, kind)
    template = doc["spec"].get("template") or doc["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    return template["spec"]["containers"][0]
