"""``safetile generate`` on a random checkpoint with a word-level tokenizer.json: the streamed text
is the reference's greedy continuation, ids work without a tokenizer, and bad inputs are refused
with exit status 2 and a message (no traceback)."""
from __future__ import annotations

import os

import pytest
import qwen3_reference as R

from safetile.cli import main

pytest.importorskip("safetensors")
pytest.importorskip("torch")
tokenizers = pytest.importorskip("tokenizers")

WORDS = [f"w{i}" for i in range(R.TINY["vocab_size"])]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    cfg = dict(R.TINY, num_hidden_layers=1)
    tensors = R.random_tensors(cfg, seed=31)
    path = str(tmp_path_factory.mktemp("qwen3-cli"))
    R.write_checkpoint(path, cfg, tensors)
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    tok.save(os.path.join(path, "tokenizer.json"))
    return path, cfg, tensors


def test_generate_streams_text(checkpoint, capsys):
    path, cfg, tensors = checkpoint
    assert main(["generate", "--model", path, "--prompt", "w3 w17 w42 w5", "--max-new-tokens", "6",
                 "--device", "cpu", "--ignore-eos"]) == 0
    out, err = capsys.readouterr()
    want = R.greedy(cfg, tensors, [3, 17, 42, 5], 6)
    assert out.split() == [WORDS[t] for t in want]
    assert "tokens/s" in err and "4 prompt tokens" in err


def test_generate_from_ids(checkpoint, capsys):
    path, cfg, tensors = checkpoint
    assert main(["generate", "--model", path, "--prompt-ids", "3,17,42,5", "--max-new-tokens", "4",
                 "--device", "cpu", "--print-ids", "--ignore-eos"]) == 0
    out, _ = capsys.readouterr()
    assert [int(x) for x in out.split()] == R.greedy(cfg, tensors, [3, 17, 42, 5], 4)


def test_generate_stops_at_eos(checkpoint, capsys):
    """config.json's eos_token_id (1 here) ends the stream when it is produced."""
    path, cfg, tensors = checkpoint
    ids = [3, 17, 42, 5]
    cont = R.greedy(cfg, tensors, ids, 8)
    assert main(["generate", "--model", path, "--prompt-ids", "3,17,42,5", "--max-new-tokens", "8",
                 "--device", "cpu", "--print-ids"]) == 0
    out = [int(x) for x in capsys.readouterr()[0].split()]
    assert out == (cont[:cont.index(1) + 1] if 1 in cont else cont)


@pytest.mark.parametrize("argv, message", [
    (["--prompt-ids", "1,x"], "comma-separated"),
    (["--prompt-ids", "1,2", "--max-new-tokens", "-1"], ">= 0"),
    (["--prompt-ids", "1,100000"], "outside the vocabulary"),
])
def test_generate_refuses_bad_input(checkpoint, capsys, argv, message):
    assert main(["generate", "--model", checkpoint[0], "--device", "cpu", *argv]) == 2
    err = capsys.readouterr()[1]
    assert message in err and "Traceback" not in err


def test_generate_refuses_missing_files(tmp_path, capsys):
    assert main(["generate", "--model", str(tmp_path), "--prompt-ids", "1", "--device", "cpu"]) == 2
    assert "config.json" in capsys.readouterr()[1]
    assert main(["generate", "--model", str(tmp_path), "--prompt", "hello", "--device", "cpu"]) == 2
    assert "tokenizer.json" in capsys.readouterr()[1]
