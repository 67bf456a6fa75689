"""Loading: positions and paths, List output, JSON, merge keys, and refusal of hostile input."""

from __future__ import annotations

import io
import json
import time
import tracemalloc

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.audit.loader import format_path, load_inputs, parse_text
from gpuscale.errors import UserInputError

DEPLOY = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: a
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: c
        image: x
"""


def test_positions_are_one_based_and_follow_paths():
    (obj,) = parse_text(DEPLOY, "d.yaml")
    assert obj.position(("spec", "replicas")) == (6, 3)
    assert obj.position(("spec", "template", "spec", "containers", 0, "image")) == (11, 9)
    # a missing field reports its nearest existing parent
    assert obj.position(("spec", "template", "spec", "nodeSelector")) == (8, 5)


def test_kubectl_list_is_flattened_with_item_paths():
    text = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "List",
            "items": [
                {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p0"}},
                {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "namespace": "ns"}},
            ],
        },
        indent=2,
    )
    objs = parse_text(text, "l.json")
    assert [o.ref for o in objs] == ["Pod/p0", "Pod/ns/p1"]
    assert objs[1].base_path == ("items", 1)
    line = objs[1].position(("metadata", "name"))[0]
    assert '"p1"' in text.splitlines()[line - 1]


def test_multi_document_helm_output_and_non_objects():
    text = "# Source: chart/templates/a.yaml\n---\n" + DEPLOY + "---\n# empty\n---\nfoo: bar\n"
    objs = parse_text(text, "helm.yaml")
    assert [o.kind for o in objs] == ["Deployment"]  # values-like document skipped


def test_merge_keys_are_applied():
    text = "base: &b {x: 1, y: 2}\napiVersion: v1\nkind: ConfigMap\ndata:\n  <<: *b\n  y: 3\n"
    (obj,) = parse_text(text, "m.yaml")
    assert obj.data["data"] == {"x": 1, "y": 3}


def test_syntax_error_names_file_line_and_column():
    with pytest.raises(UserInputError) as err:
        parse_text("apiVersion: v1\nkind: Pod\nspec: [a, b\nx: 1\n", "bad.yaml")
    message = str(err.value)
    assert message.startswith("bad.yaml: line 4, column 2")
    assert "\n" not in message


def test_object_without_kind_is_bad_input():
    with pytest.raises(UserInputError, match="no string `kind`"):
        parse_text("apiVersion: v1\nmetadata: {name: x}\n", "k.yaml")


def _billion_laughs(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "apiVersion: v1\nkind: ConfigMap\ndata:\n" + "".join(f"  {line}\n" for line in lines)


def test_alias_bomb_is_refused_fast_and_small():
    tracemalloc.start()
    start = time.perf_counter()
    with pytest.raises(UserInputError, match="alias"):
        parse_text(_billion_laughs(), "bomb.yaml")
    elapsed = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert elapsed < 1.0
    assert peak < 20 * 2**20


def test_modest_aliases_are_fine():
    (obj,) = parse_text(_billion_laughs(levels=2), "ok.yaml")
    assert len(obj.data["data"]["a2"]) == 9


def test_oversized_file_refused_before_reading(tmp_path):
    big = tmp_path / "big.yaml"
    with open(big, "wb") as handle:  # sparse: 100 MB on paper, nothing on disk
        handle.truncate(100 * 2**20)
    start = time.perf_counter()
    with pytest.raises(UserInputError, match="over the 16777216-byte limit"):
        load_inputs([str(big)])
    assert time.perf_counter() - start < 0.5


def test_oversized_stdin_refused():
    with pytest.raises(UserInputError, match="<stdin>: input is larger"):
        load_inputs(["-"], max_bytes=1000, stdin=io.BytesIO(b"#" * 5000))


def test_directory_walk_is_sorted_and_filtered(tmp_path):
    (tmp_path / "b.yaml").write_text(DEPLOY.replace("name: a", "name: b"))
    (tmp_path / "a.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})
    )
    (tmp_path / "notes.txt").write_text("not yaml: [")
    objs = load_inputs([str(tmp_path)])
    assert [o.name for o in objs] == ["p", "b"]


def test_missing_path_is_bad_input(tmp_path):
    with pytest.raises(UserInputError, match="no such file"):
        load_inputs([str(tmp_path / "nope.yaml")])


def test_format_path():
    assert format_path(("spec", "metrics", 0, "external", "metric", "name")) == \
        "spec.metrics[0].external.metric.name"


keys = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=6)
values = st.recursive(
    st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.text(alphabet="xyz ", max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(keys, values, min_size=1, max_size=4))
def test_roundtrip_and_every_key_mark_points_at_its_key(spec):
    doc = {"apiVersion": "v1", "kind": "Thing", "spec": spec}
    text = yaml.safe_dump(doc, sort_keys=False)
    (obj,) = parse_text(text, "h.yaml")
    assert obj.data == doc
    lines = text.splitlines()
    for path, (line, column) in obj.marks.items():
        if isinstance(path[-1], str):
            assert lines[line - 1][column - 1 :].lstrip("'\"").startswith(path[-1]), (
                path,
                lines[line - 1],
            )
