"""Tensor-parallel Qwen3 on the CPU over gloo: 4 processes (tests/tp_worker.py, one subprocess per
rank, as torchrun starts them), each loading a random checkpoint through the real loader, sharded
over all 4 ranks and, with ``tp_group=``, over pairs of ranks (two 2-rank models side by side); and
``safetile generate`` under ``torchrun --nproc-per-node 2`` (only rank 0 prints). Every rank must
return bit-identical results, equal to one process's (logits within float32 rounding, the same
greedy and seeded-sampled tokens), for tied and untied heads, fewer key/value heads than ranks
(replicated) and at least as many (split), vocabularies and MLP widths that do not divide;
configurations that cannot split are refused naming the field. (One process's group of one:
tests/test_distributed_ops.py.)"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import qwen3_reference as R

import safetile as ct
from safetile.models import qwen3

pytest.importorskip("safetensors")
torch = pytest.importorskip("torch")
FileLock = pytest.importorskip("filelock").FileLock  # torch depends on it
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
PROMPT = [3, 17, 42, 5, 99, 7, 250, 11]
CONFIGS = {  # name: (changes to R.TINY, seed)
    "untied": (dict(), 41),  # 4 query heads, 2 key/value heads
    "tied-odd": (dict(tie_word_embeddings=True, num_key_value_heads=1, vocab_size=383, intermediate_size=151), 42),
    "wide": (dict(num_attention_heads=8, num_key_value_heads=4, hidden_size=128), 43),
    "bad": (dict(num_attention_heads=6, num_key_value_heads=3), 44),  # 3 kv heads split over neither 2 nor 4
}
STEPS = {"pair": 32, "world": 12}
WORLD = {"pair": 2, "world": 4}


# NVLink multicast stays off wherever NCCL runs (a multicast fault can take a shared host's GPUs down)
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def _env(extra: dict) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, HERE]), OMP_NUM_THREADS="1", **MULTICAST_OFF, **extra)
    if os.path.exists("/sys/class/net/lo"):
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")  # loopback: no network needed
    return env


def run_ranks(world: int, jobs: list[dict], tmp, device: str = "cpu") -> dict:
    """Start ``world`` worker processes on ``jobs``; return {job name: [per-rank results]}."""
    out = tmp / f"out{world}"
    out.mkdir(exist_ok=True)
    (tmp / f"jobs{world}.json").write_text(json.dumps(jobs))
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "tp_worker.py"), str(tmp / f"jobs{world}.json"),
                               str(out)], env=_env(dict(RANK=str(r), WORLD_SIZE=str(world), TP_DEVICE=device,
                                                        TP_STORE=str(tmp / f"store{world}"))),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in range(world)]
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=240)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for r, (p, log) in enumerate(zip(procs, logs)):
        assert p.returncode == 0, f"rank {r} of {world} failed:\n{log[-3000:]}"
    return load_results(out, world, jobs)


def load_results(out, world: int, jobs: list[dict]) -> dict:
    res = {}
    for job in jobs:
        ranks = [dict(np.load(out / f"{job['name']}-{r}.npz")) for r in range(world)]
        for r, x in enumerate(ranks):
            assert "failure" not in x, f"{job['name']} on rank {r} of {world}:\n{x['failure']}"
        res[job["name"]] = ranks
    return res


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """A directory for this test session: under pytest-xdist, one shared by the workers (whichever
    needs the 4-process run first makes it, under a file lock, and the others read its results:
    the processes run once per session, wherever this module's tests land)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        d = tmp_path_factory.getbasetemp().parent / "qwen3-tp"
        d.mkdir(exist_ok=True)
        return d
    return tmp_path_factory.mktemp("qwen3-tp")


@pytest.fixture(scope="module")
def checkpoints(shared):
    """{name: (path, config, tensors)} for CONFIGS, in the Hugging Face layout."""
    ckpts = {}
    with FileLock(str(shared / "checkpoints.lock")):
        for name, (change, seed) in CONFIGS.items():
            cfg = dict(R.TINY, **change)
            tensors = R.random_tensors(cfg, seed)
            path = str(shared / name)
            if not os.path.exists(os.path.join(path, "config.json")):
                R.write_checkpoint(path, cfg, tensors, shards=2 if name == "untied" else 1)
            ckpts[name] = (path, cfg, tensors)
    return ckpts


@pytest.fixture(scope="module")
def setup(checkpoints, shared):
    """The 4 ranks' results: (checkpoints, {job name: [per-rank results]})."""
    ckpts = checkpoints

    jobs = []
    for group in ("world", "pair"):
        jobs += [{"kind": "refuse", "name": f"bad-{group}", "path": ckpts["bad"][0], "group": group}]
        jobs += [{"kind": "model", "name": f"{name}-{group}", "path": ckpts[name][0], "prompt": PROMPT,
                  "steps": STEPS[group], "group": group,
                  "tuning": {"decode_chunk": 4} if (name, group) == ("wide", "pair") else {}}
                 for name in ("untied", "tied-odd", "wide")]
        jobs.append({"kind": "collectives", "name": f"coll-{group}", "group": group})
    with FileLock(str(shared / "run.lock")):
        if (shared / "run.done").exists():
            return ckpts, load_results(shared / "out4", 4, jobs)
        res = run_ranks(4, jobs, shared)
        (shared / "run.done").touch()
    return ckpts, res


@pytest.fixture(scope="module")
def single(checkpoints):
    """One process's results for each checkpoint (the engine itself, no process group)."""
    ckpts = checkpoints
    out = {}
    for name in ("untied", "tied-odd", "wide"):
        path, cfg, tensors = ckpts[name]
        m = qwen3.load(path, max_seq_len=128)
        steps = []
        for _ in m.stream(PROMPT, 3):
            steps.append(m._logits().copy())
        out[name] = dict(logits=m.logits(PROMPT), greedy=m.generate(PROMPT, 64),
                         topk=m.generate(PROMPT, 8, temperature=0.8, top_k=20, seed=3),
                         topp=m.generate(PROMPT, 8, temperature=0.8, top_p=0.9, seed=4), step_logits=np.stack(steps),
                         ops=m.decode_graph(1).num_ops, ref=R.forward(cfg, tensors, PROMPT)[-1])
    return out


def rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.mark.parametrize("group", ["world", "pair"])
@pytest.mark.parametrize("name", ["untied", "tied-odd", "wide"])
def test_ranks_match_one_process(setup, single, group, name):
    """Over 4 ranks: 2 (untied, wide) or 1 (tied-odd) key/value heads, each on several ranks; over
    2: 1 or 2 key/value heads per rank (tied-odd: its one head on both)."""
    ranks = setup[1][f"{name}-{group}"]
    one = single[name]
    first = ranks[0]
    assert [int(r["world"]) for r in ranks] == [WORLD[group]] * 4
    for r, got in enumerate(ranks):  # every rank returns the same, bit for bit
        for key in ("logits", "greedy", "topk", "topp", "step_logits"):
            assert np.array_equal(got[key], first[key]), (r, key)
    assert first["logits"].shape == one["logits"].shape
    assert rel(first["logits"], one["logits"]) < 1e-5 and rel(first["logits"], one["ref"]) < 1e-5
    assert rel(first["step_logits"], one["step_logits"]) < 1e-5
    assert first["greedy"].tolist() == one["greedy"][:STEPS[group]]
    assert first["topk"].tolist() == one["topk"] and first["topp"].tolist() == one["topp"]


@pytest.mark.parametrize("group", ["world", "pair"])
def test_decode_graph_holds_the_collectives(setup, single, group):
    """Two all-reduces per layer and two all-gathers for the argmax, recorded with the launches."""
    ops = [str(o) for o in setup[1][f"untied-{group}"][0]["ops"]]
    layers, world = R.TINY["num_hidden_layers"], WORLD[group]
    assert len(ops) == single["untied"]["ops"] + 2 * layers + 2
    assert sum(o == f"all_reduce over {world} ranks" for o in ops) == 2 * layers
    assert sum(o == f"all_gather over {world} ranks" for o in ops) == 2


@pytest.mark.parametrize("group", ["world", "pair"])
def test_heads_that_do_not_split_are_refused(setup, group):
    for got in setup[1][f"bad-{group}"]:
        msg = str(got["error"])
        assert "num_key_value_heads = 3" in msg and f"{WORLD[group]} tensor-parallel ranks" in msg


@pytest.mark.parametrize("group", ["world", "pair"])
def test_collective_ops_across_ranks(setup, group):
    world = WORLD[group]
    ranks = np.arange(world)
    for got in setup[1][f"coll-{group}"]:
        assert int(got["world"]) == world
        assert got["summed"].tolist() == (world * np.arange(6) + 10 * ranks.sum()).tolist()
        assert got["biggest"].tolist() == [world - 1] * 3
        assert got["gathered"].tolist() == np.repeat(ranks, 2)[:, None].repeat(3, 1).tolist()
        assert got["bf_sum"].tolist() == (world * np.arange(4) + ranks.sum()).tolist()
        for k, rep in enumerate(got["replays"]):  # the graph read each replay's fresh input
            assert rep.tolist() == (2 * world * (k + 1) * np.arange(8) + 2 * ranks.sum()).tolist()
        assert [str(o) for o in got["graph_ops"]][-1] == f"all_reduce over {world} ranks"


def test_generate_cli_under_torchrun(checkpoints):
    """``torchrun --nproc-per-node 2 -m safetile generate``: the tokens of one process, printed once."""
    ckpts = checkpoints
    path, cfg, tensors = ckpts["untied"]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "safetile",
           "generate", "--model", path, "--prompt-ids", "3,17,42,5", "--max-new-tokens", "8", "--device", "cpu",
           "--print-ids", "--ignore-eos"]
    p = subprocess.run(cmd, env=_env({}), capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-3000:]
    lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
    assert lines == [" ".join(str(t) for t in R.greedy(cfg, tensors, [3, 17, 42, 5], 8))]
    assert p.stderr.count("prompt tokens") == 1 and "tensor parallel over 2 ranks" in p.stderr


# ---------------------------------------------------------------------------- the layout, in one process

@pytest.mark.parametrize("nq, nkv, world", [(4, 2, 2), (4, 2, 4), (4, 1, 2), (8, 4, 4), (8, 8, 2), (64, 8, 8),
                                           (64, 8, 16), (16, 8, 4)])
def test_layout_covers_every_head_column_and_token(nq, nkv, world):
    from safetile.models.qwen3.parallel import layout
    cfg = qwen3.Qwen3Config(**dict(R.TINY, num_attention_heads=nq, num_key_value_heads=nkv, vocab_size=1001,
                                   intermediate_size=150))
    parts = [layout(cfg, r, world) for r in range(world)]
    assert [p.q_heads for p in parts] == [(r * nq // world, (r + 1) * nq // world) for r in range(world)]
    for p in parts:  # each rank's key/value heads are exactly those its query heads use
        assert p.kv_heads == (p.q_heads[0] // cfg.group, (p.q_heads[1] - 1) // cfg.group + 1)
        assert p.nq == p.group_size * p.nkv
    if nkv >= world:  # split, each head once
        assert sum(p.nkv for p in parts) == nkv
    for attr, n in (("inter", 150), ("vocab", 1001)):
        ranges = [getattr(p, attr) for p in parts]
        assert ranges[0][0] == 0 and ranges[-1][1] == n and all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    assert max(p.inter_size for p in parts) - min(p.inter_size for p in parts) <= 1
    assert all(p.vocab[1] - p.vocab[0] <= p.vocab_shard for p in parts)


@pytest.mark.parametrize("nq, nkv, world, field", [(6, 3, 2, "num_key_value_heads = 3"),
                                                   (12, 6, 4, "num_key_value_heads = 6"),
                                                   (4, 2, 8, "num_key_value_heads = 2")])
def test_layout_refuses_heads_that_do_not_split(nq, nkv, world, field):
    from safetile.models.qwen3.parallel import layout
    cfg = qwen3.Qwen3Config(**dict(R.TINY, num_attention_heads=nq, num_key_value_heads=nkv))
    with pytest.raises(qwen3.CheckpointError, match=field):
        layout(cfg, 0, world)


@pytest.mark.parametrize("tied", [False, True])
def test_shards_put_together_are_the_weights(tied):
    """Each rank's weights (the real loading code, given the rank's layout) are slices of the
    model's: stacked back together they are the whole model."""
    from safetile.models.qwen3.checkpoint import build_weights
    from safetile.models.qwen3.parallel import layout
    cfg_d = dict(R.TINY, tie_word_embeddings=tied, vocab_size=383, intermediate_size=151)
    cfg, t = qwen3.Qwen3Config(**cfg_d), R.random_tensors(cfg_d, seed=61)
    world, d = 2, cfg.head_dim
    ws = [build_weights(cfg, t.__getitem__, t.__contains__, "cpu", ct.float32, layout(cfg, r, world))
          for r in range(world)]
    head = np.concatenate([w.head.to_numpy() for w in ws])
    assert np.array_equal(head, t["model.embed_tokens.weight" if tied else "lm_head.weight"])
    assert all(np.array_equal(w.embed.to_numpy(), t["model.embed_tokens.weight"]) for w in ws)
    if tied:  # the head is a view of the rank's rows of the table, not a copy
        assert np.shares_memory(ws[1].head._tensor._data, ws[1].embed._tensor._data)
    lay = "model.layers.1."
    q = np.concatenate([w.layers[1].wqkv.to_numpy()[:2 * d] for w in ws])
    k = np.concatenate([w.layers[1].wqkv.to_numpy()[2 * d:3 * d] for w in ws])
    assert np.array_equal(q, t[lay + "self_attn.q_proj.weight"]) and np.array_equal(k, t[lay + "self_attn.k_proj.weight"])
    assert np.array_equal(np.concatenate([w.layers[1].wo.to_numpy() for w in ws], 1), t[lay + "self_attn.o_proj.weight"])
    assert np.array_equal(np.concatenate([w.layers[1].w_up.to_numpy() for w in ws]), t[lay + "mlp.up_proj.weight"])
    assert np.array_equal(np.concatenate([w.layers[1].w_down.to_numpy() for w in ws], 1), t[lay + "mlp.down_proj.weight"])


def test_cuda_means_the_ranks_own_gpu(monkeypatch):
    from safetile.models.qwen3.parallel import rank_device
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert rank_device("cuda", 4) == "cuda:3" and rank_device("cuda", 1) == "cuda" and rank_device("cpu", 4) == "cpu"
    assert rank_device("cuda:1", 4) == "cuda:1"


# ---------------------------------------------------------------------------- two GPUs, NCCL

@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2, reason="needs 2 CUDA GPUs")
def test_two_gpus_over_nccl(checkpoints, single, tmp_path):
    """The same on two GPUs (float32 weights): the decode step a CUDA graph holding the NCCL
    collectives, the ranks bit-identical, the tokens one CPU process's; the collective ops alone,
    a launch + all-reduce CUDA graph among them."""
    jobs = [{"kind": "model", "name": name, "path": checkpoints[name][0], "prompt": PROMPT, "steps": 64}
            for name in ("untied", "wide")] + [{"kind": "collectives", "name": "coll"}]
    res = run_ranks(2, jobs, tmp_path, device="cuda")
    for name in ("untied", "wide"):
        ranks, one = res[name], single[name]
        for key in ("logits", "greedy", "topk", "topp", "step_logits"):
            assert all(np.array_equal(r[key], ranks[0][key]) for r in ranks), key
        assert all(bool(r["cuda_graph"]) and int(r["world"]) == 2 for r in ranks)
        assert rel(ranks[0]["logits"], one["logits"]) < 1e-4
        assert ranks[0]["greedy"].tolist() == one["greedy"][:64]
    for got in res["coll"]:
        assert bool(got["cuda_graph"])
        assert got["summed"].tolist() == (2 * np.arange(6) + 10).tolist()
        for k, rep in enumerate(got["replays"]):
            assert rep.tolist() == (4 * (k + 1) * np.arange(8) + 2).tolist()
