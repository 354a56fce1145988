"""The Qwen3 engine on the CPU backend: random checkpoints in the Hugging Face layout (config.json,
sharded safetensors with an index, tied and untied heads), loaded by the real loading code and
compared with an independent NumPy Qwen3 (tests/qwen3_reference.py) and with transformers' Qwen3
where it is installed: next-token logits, and identical greedy tokens for 64 steps."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
import qwen3_reference as R

from safetile.models import qwen3

pytest.importorskip("safetensors")
torch = pytest.importorskip("torch")

PROMPT = [3, 17, 42, 5, 99, 7, 250, 11]
STEPS = 64


def rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.fixture(scope="module", params=[("untied", 2), ("tied", 1)], ids=["untied-2-shards", "tied-1-file"])
def checkpoint(request, tmp_path_factory):
    tie, shards = request.param
    cfg = dict(R.TINY, tie_word_embeddings=(tie == "tied"))
    tensors = R.random_tensors(cfg, seed=11 if tie == "tied" else 12)
    path = str(tmp_path_factory.mktemp(f"qwen3-{tie}"))
    R.write_checkpoint(path, cfg, tensors, shards=shards)
    return path, cfg, tensors


@pytest.fixture(scope="module")
def model(checkpoint):
    return qwen3.load(checkpoint[0], max_seq_len=128)


def test_checkpoint_layout(checkpoint):
    path, cfg, _ = checkpoint
    files = sorted(os.listdir(path))
    if cfg["tie_word_embeddings"]:
        assert files == ["config.json", "model.safetensors"]
    else:
        assert "model.safetensors.index.json" in files and sum(f.endswith(".safetensors") for f in files) == 2
        with open(os.path.join(path, "model.safetensors.index.json")) as f:
            assert "lm_head.weight" in json.load(f)["weight_map"]


def test_logits_match_numpy_reference(model, checkpoint):
    _, cfg, tensors = checkpoint
    ref = R.forward(cfg, tensors, PROMPT)[-1]
    got = model.logits(PROMPT)
    assert got.shape == (cfg["vocab_size"],) and got.dtype == np.float32
    assert rel(got, ref) < 1e-5
    # a single-token prompt too (the prefill's edge tiles)
    assert rel(model.logits([9]), R.forward(cfg, tensors, [9])[-1]) < 1e-5


def test_greedy_64_steps_match_numpy_reference(model, checkpoint):
    _, cfg, tensors = checkpoint
    got = model.generate(PROMPT, STEPS)
    assert got == R.greedy(cfg, tensors, PROMPT, STEPS)
    assert model.stats.new_tokens == STEPS and model.stats.prompt_tokens == len(PROMPT)


def test_decode_logits_match_reference_after_each_step(model, checkpoint):
    """The decode graph's logits (not only its argmax) after a few steps."""
    _, cfg, tensors = checkpoint
    toks = []
    for tok in model.stream(PROMPT, 4):
        toks.append(tok)
        got = model._read("logits")[0]
        ref = R.forward(cfg, tensors, PROMPT + toks[:-1])[-1]
        assert rel(got, ref) < 1e-5


def test_matches_transformers(checkpoint, model):
    transformers = pytest.importorskip("transformers")
    path = checkpoint[0]
    hf = transformers.Qwen3ForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    with torch.no_grad():
        ref = hf(torch.tensor([PROMPT])).logits[0, -1].numpy()
        out = hf.generate(torch.tensor([PROMPT]), max_new_tokens=STEPS, min_new_tokens=STEPS, do_sample=False,
                          pad_token_id=0, eos_token_id=None)
    assert rel(model.logits(PROMPT), ref) < 1e-5
    assert model.generate(PROMPT, STEPS) == out[0, len(PROMPT):].tolist()


def test_bf16_checkpoint_on_cpu(tmp_path):
    """A bfloat16 checkpoint (as published) loads as float32 on the CPU, from the rounded values."""
    cfg = dict(R.TINY, num_hidden_layers=1)
    tensors = R.random_tensors(cfg, seed=3)
    R.write_checkpoint(str(tmp_path), cfg, tensors, dtype="bfloat16")
    m = qwen3.load(str(tmp_path), max_seq_len=32)
    rounded = {k: torch.from_numpy(v).bfloat16().float().numpy() for k, v in tensors.items()}
    assert m.config.torch_dtype == "bfloat16" and m.dtype.name == "float32"
    assert rel(m.logits(PROMPT[:3]), R.forward(cfg, rounded, PROMPT[:3])[-1]) < 1e-5


def test_raw_bf16_reader_matches_torch(tmp_path):
    """Without torch, bfloat16 tensors are read straight from the file."""
    from safetensors.torch import save_file

    from safetile.models.qwen3.checkpoint import _read_raw
    x = torch.randn(5, 7).bfloat16()
    save_file({"a": x, "b": torch.randn(3)}, str(tmp_path / "m.safetensors"))
    got = _read_raw(str(tmp_path / "m.safetensors"), "a")
    assert got.shape == (5, 7) and np.array_equal(got.astype(np.float32), x.float().numpy())


def test_streaming_yields_as_produced_and_stops(model):
    it = model.stream(PROMPT, 10)
    first = next(it)
    assert model.stats.new_tokens == 1  # the first token is known before the rest are computed
    rest = list(it)
    assert [first] + rest == model.generate(PROMPT, 10)
    stop_at = rest[2]
    got = model.generate(PROMPT, 10, stop=[stop_at])
    assert got[-1] == stop_at and len(got) == [first, *rest].index(stop_at) + 1
    assert model.generate(PROMPT, 0) == []


def test_sampling_is_seeded_and_top_k_1_is_greedy(model):
    greedy = model.generate(PROMPT, 8)
    assert model.generate(PROMPT, 8, temperature=0.7, top_k=1, seed=5) == greedy
    a = model.generate(PROMPT, 12, temperature=4.0, top_k=20, top_p=0.9, seed=7)
    b = model.generate(PROMPT, 12, temperature=4.0, top_k=20, top_p=0.9, seed=7)
    c = model.generate(PROMPT, 12, temperature=4.0, top_k=20, top_p=0.9, seed=8)
    assert a == b and a != c
    d = model.generate(PROMPT, 12, temperature=4.0, seed=7)  # the whole vocabulary (host path)
    assert len(d) == 12 and d != greedy


def test_device_candidates_are_the_top_logits(model):
    """The device's top-k candidates are exactly the k largest logits."""
    model.generate(PROMPT, 1, temperature=1.0, top_k=5, seed=0)
    logits = model._read("logits")[0]
    vals, idxs = model._read("cand_v").ravel(), model._read("cand_i").ravel()
    k = model._topk_k()
    assert np.array_equal(np.sort(vals)[::-1][:k], np.sort(logits)[::-1][:k])
    assert np.array_equal(logits[idxs[np.isfinite(vals)]], vals[np.isfinite(vals)])


def test_choose_follows_the_warpers():
    from safetile.models.qwen3.sampling import Sampling, choose
    logits = np.log(np.array([0.5, 0.3, 0.15, 0.05]))
    ids = np.array([10, 11, 12, 13])
    rng = np.random.default_rng(0)
    draws = [choose(logits, ids, Sampling(1.0, 0, 0.7), rng) for _ in range(2000)]
    assert set(draws) == {10, 11}  # top-p 0.7 keeps 0.5 + 0.3
    assert abs(draws.count(10) / 2000 - 0.625) < 0.05
    draws = [choose(logits, ids, Sampling(1.0, 3, 1.0), rng) for _ in range(2000)]
    assert set(draws) == {10, 11, 12}
    with pytest.raises(ValueError, match="top_p"):
        Sampling(1.0, 0, 0.0)
    with pytest.raises(ValueError, match="temperature"):
        Sampling(-1.0)


def test_bad_requests_are_refused_before_running(model):
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model.generate([1, 10**6], 4)
    with pytest.raises(ValueError, match="capacity"):
        model.generate(PROMPT, 200)
    with pytest.raises(ValueError, match="non-empty"):
        model.logits([])
    it = model.stream(PROMPT, 4)
    next(it)
    with pytest.raises(qwen3.GenerationBusyError, match="already generating"):
        model.generate(PROMPT, 2)
    it.close()  # closing the stream frees the model
    assert len(model.generate(PROMPT, 2)) == 2


@pytest.mark.parametrize("call, message", [
    (lambda m: m.generate([1.5], 2), r"prompt\[0\] = 1.5 is not a token id"),  # was truncated to 1
    (lambda m: m.generate([3, True], 2), r"prompt\[1\] = True is not a token id"),
    (lambda m: m.generate(["a"], 2), "is not a token id"),
    (lambda m: m.generate(None, 2), "a sequence of token ids, got NoneType"),
    (lambda m: m.logits([2.0]), "is not a token id"),
    (lambda m: m.generate(PROMPT, 1.5), "max_new_tokens must be an integer"),
    (lambda m: m.generate(PROMPT, "4"), "max_new_tokens must be an integer"),
    (lambda m: m.generate(PROMPT, 2, temperature="hot"), "temperature must be a finite number"),
    (lambda m: m.generate(PROMPT, 2, top_k=1.5), "top_k must be an integer"),
    (lambda m: m.generate(PROMPT, 2, top_p=None), r"top_p must be in \(0, 1\]"),
    (lambda m: m.generate(PROMPT, 2, temperature=1.0, seed=-1), "seed must be None or an integer"),
    (lambda m: m.generate(PROMPT, 2, stop=3), "stop must be a sequence"),
    (lambda m: m.generate(PROMPT, 2, stop=[1.0]), "stop: 1.0 is not a token id"),
])
def test_bad_arguments_are_safetile_errors_naming_them(model, call, message):
    """Every refused request is an ArgumentError (also a ValueError and a TypeError) naming the
    argument, raised before anything runs: the model's next request is unchanged."""
    import safetile as ct
    before = model.generate(PROMPT, 3)
    with pytest.raises(ct.ArgumentError, match=message):
        call(model)
    assert model.generate(PROMPT, 3) == before
    assert model.generate(np.array(PROMPT), 3) == before  # NumPy integers are token ids
    assert model.generate([torch.tensor(t) for t in PROMPT], 3) == before  # so are 0-d torch integers


def test_checkpoint_errors(tmp_path):
    cfg = dict(R.TINY, num_hidden_layers=1)
    tensors = R.random_tensors(cfg, seed=1)
    del tensors["model.layers.0.mlp.up_proj.weight"]
    R.write_checkpoint(str(tmp_path / "a"), cfg, tensors)
    with pytest.raises(qwen3.CheckpointError, match="up_proj"):
        qwen3.load(str(tmp_path / "a"))
    tensors = R.random_tensors(cfg, seed=1)
    tensors["model.norm.weight"] = tensors["model.norm.weight"][:-1]
    R.write_checkpoint(str(tmp_path / "b"), cfg, tensors)
    with pytest.raises(qwen3.CheckpointError, match="model.norm.weight.*shape"):
        qwen3.load(str(tmp_path / "b"))
    with pytest.raises(qwen3.CheckpointError, match="not a checkpoint directory"):
        qwen3.load(str(tmp_path / "missing"))
    os.makedirs(tmp_path / "c")
    with pytest.raises(qwen3.CheckpointError, match="no config.json"):
        qwen3.load(str(tmp_path / "c"))


@pytest.mark.parametrize("change, message", [
    ({"model_type": "qwen3_moe"}, "model_type"), ({"rope_scaling": {"rope_type": "yarn"}}, "yarn"),
    ({"use_sliding_window": True}, "sliding"), ({"head_dim": 24}, "power of two"),
    ({"attention_bias": True}, "bias"), ({"num_key_value_heads": 3}, "multiple"),
])
def test_unsupported_configs_are_refused(change, message):
    d = {**R.config_json(R.TINY), **change}
    with pytest.raises(qwen3.CheckpointError, match=message):
        qwen3.Qwen3Config.from_dict(d)


def test_config_forms():
    """rope_theta at the top level (Hub checkpoints) or in rope_parameters (transformers 5)."""
    d = R.config_json(R.TINY)
    assert qwen3.Qwen3Config.from_dict(d).rope_theta == 10000.0
    d2 = {k: v for k, v in d.items() if k != "rope_theta"}
    d2["rope_parameters"] = {"rope_theta": 5e5, "rope_type": "default"}
    assert qwen3.Qwen3Config.from_dict(d2).rope_theta == 5e5
    c = qwen3.shape_config("4B")
    assert round(c.num_parameters() / 1e9, 2) == 4.02 and c.weight_bytes_per_token(2) / 1e9 > 8.0


def test_decode_step_is_one_graph(model):
    """The whole step is one captured graph: 7 launches per layer, embedding, head and argmax."""
    g = model.decode_graph()
    assert g.num_ops == 7 * model.config.num_hidden_layers + 3
    assert g.ops[0].startswith("embed") or "embed" in g.ops[0]


def test_bench_torch_peer_matches_reference(checkpoint):
    """The benchmark's plain-PyTorch peer computes the same model (so its timings compare like with like)."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
    from qwen3_torch import TorchQwen3
    _, cfg, tensors = checkpoint
    peer = TorchQwen3(qwen3.Qwen3Config(**cfg), {k: torch.from_numpy(v) for k, v in tensors.items()}, "cpu",
                      torch.float32, 128)
    assert rel(peer.prefill(PROMPT).numpy(), R.forward(cfg, tensors, PROMPT)[-1]) < 1e-5
    assert peer.generate(PROMPT, 16) == R.greedy(cfg, tensors, PROMPT, 16)


def test_several_decode_steps_per_replay(checkpoint):
    """decode_chunk > 1: k steps per graph replay (tokens from the device's history), the same tokens,
    with a remainder shorter than a chunk and a stop token inside a chunk."""
    path, cfg, tensors = checkpoint
    m = qwen3.load(path, max_seq_len=128, tuning=qwen3.tuning.CPU.with_(decode_chunk=4))
    want = R.greedy(cfg, tensors, PROMPT, 11)
    assert m.generate(PROMPT, 11) == want
    assert m.decode_graph(4).num_ops == 4 * m.decode_graph(1).num_ops
    stop = want[6]
    got = m.generate(PROMPT, 11, stop=[stop])
    assert got == want[:want.index(stop) + 1]


def test_a_failed_launch_leaves_the_model_usable(checkpoint, monkeypatch):
    """A launch rejected in the middle of the prefill raises its own error, and the model's buffers
    come back: the next request works."""
    import safetile as ct
    from safetile.models.qwen3 import kernels_gemm
    path, cfg, tensors = checkpoint
    m = qwen3.load(path, max_seq_len=64)
    failing = ct.entry(preconditions=["dim(a, 0) < 0"])(kernels_gemm.gemm_residual.__wrapped__)
    monkeypatch.setattr(kernels_gemm, "gemm_residual", failing)
    with pytest.raises(ct.PreconditionError):
        m.logits(PROMPT)
    monkeypatch.undo()
    assert rel(m.logits(PROMPT), R.forward(cfg, tensors, PROMPT)[-1]) < 1e-5
