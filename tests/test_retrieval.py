"""Retrieval context: chunking, the persisted BM25 store, re-adding, rendering, and the prompt builder hook."""

from pathlib import Path

import pytest

pytest.importorskip("rank_bm25", reason="retrieval needs rank-bm25 (pip install rank-bm25)")

from cudaopt.retrieval import (
    KnowledgeStore,
    RetrievalPromptBuilder,
    chunk_text,
    render_context,
    task_query,
    tokenize,
)
from cudaopt.tasks.loader import load_task

FIX = Path(__file__).parent / "fixtures"

DOCS = {
    "notes/softmax.md": "# Softmax\n\nA row softmax needs the row maximum and the sum of exponentials.\n\n"
                        "Use a warp reduction with __shfl_down_sync to find the maximum, then a second pass for the sum.\n"
                        "Online softmax fuses both passes into one.\n",
    "notes/tiling.md": "# Shared memory tiling\n\nMatrix multiplication loads tiles of A and B into shared memory.\n\n"
                       "Each thread block computes one output tile; __syncthreads separates loading from computing.\n",
    "notes/tanh.txt": "Elementwise kernels like tanh are memory bound: use float4 vectorised loads and a grid-stride loop.\n",
    "code/reduce.cu": "__global__ void warpReduceMax(float* out, const float* in) {\n  float v = in[threadIdx.x];\n"
                      "  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_down_sync(0xffffffff, v, o));\n  out[0] = v;\n}\n",
    "code/.hidden/secret.md": "softmax softmax softmax\n",
    "code/image.bin": "softmax",
}


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "kb"
    for rel, text in DOCS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_tokenize_splits_identifiers():
    assert tokenize("warpReduceMax(__shfl_down_sync)") == ["warpreducemax", "warp", "reduce", "max", "shfl_down_sync", "shfl", "down", "sync"]
    assert tokenize("HTTPServer float4") == ["httpserver", "http", "server", "float4", "float"]


def test_chunks_cover_the_file_and_cut_at_blank_lines():
    text = "\n\n".join("\n".join(f"p{p} l{i} " + "x" * 40 for i in range(5)) for p in range(6))
    chunks = chunk_text(text, max_chars=500)
    assert len(chunks) > 1 and all(len(c.text) <= 500 for c in chunks)
    assert chunks[0].start_line == 1 and chunks[-1].end_line == len(text.splitlines())
    assert all(c.text.splitlines()[0].startswith("p") for c in chunks)  # every chunk starts at a paragraph
    joined = [ln for c in chunks for ln in c.text.splitlines() if ln.strip()]
    assert joined == [ln for ln in text.splitlines() if ln.strip()]
    assert chunk_text("one " * 1000, max_chars=100)[0].end_line == 1  # one long line stays one chunk


def test_store_search_persist_and_readd(folder, tmp_path):
    with KnowledgeStore(tmp_path / "store") as ks:
        rep = ks.add_folder(folder)
        assert (rep.added, rep.unchanged, rep.skipped) == (4, 0, 0)  # hidden folder and .bin left out
        assert ks.sources() == ["kb/code/reduce.cu", "kb/notes/softmax.md", "kb/notes/tanh.txt", "kb/notes/tiling.md"]
        hits = ks.search("softmax row maximum warp reduction", k=2)
        assert [h.source.split(":")[0] for h in hits] == ["kb/notes/softmax.md", "kb/code/reduce.cu"]
        assert hits[0].score > hits[1].score > 0 and hits[0].source == "kb/notes/softmax.md:1-6"
        assert ks.search("quantum chromodynamics") == []  # nothing shares a term
    with KnowledgeStore(tmp_path / "store") as ks:  # reopened from disk
        assert ks.search("shared memory tiles matmul", k=1)[0].source.startswith("kb/notes/tiling.md")
        (folder / "notes" / "tanh.txt").write_text("Tanh: see the fast approximations in the math library.\n")
        rep = ks.add_folder(folder)
        assert (rep.added, rep.unchanged) == (1, 3)
        assert "fast approximations" in ks.search("tanh", k=1)[0].text


def test_render_context_names_sources(folder, tmp_path):
    with KnowledgeStore(tmp_path / "store") as ks:
        ks.add_folder(folder)
        text = render_context(ks.search("float4 vectorised loads", k=2))
    assert text.startswith("## Reference material") and "### [1] kb/notes/tanh.txt:1-1" in text and "float4" in text
    assert render_context([]) == ""


def test_prompt_builder_adds_context_before_the_instructions(folder, tmp_path):
    task = load_task(FIX / "tasks" / "scaled_tanh.py")
    assert "tanh" in task_query(task).split() and "import" not in task_query(task).split()
    with KnowledgeStore(tmp_path / "store") as ks:
        ks.add_folder(folder)
        prompt = RetrievalPromptBuilder(store=ks, k=1).build(task, [])
    assert prompt.index("## Reference material") < prompt.index("## How to answer")
    assert "kb/notes/tanh.txt" in prompt and "no earlier implementations" in prompt
    assert RetrievalPromptBuilder().build(task, []) == RetrievalPromptBuilder().oneshot(task)  # no store: unchanged
