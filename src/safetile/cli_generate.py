"""``safetile generate``: run a Hugging Face Qwen3 checkpoint (``safetile.models.qwen3``).

``safetile generate --model DIR (--prompt TEXT | --prompt-ids 1,2,3) [--max-new-tokens N]
[--device cpu|cuda] [--temperature T --top-k K --top-p P --seed S] [--max-seq-len N]``
tokenises the prompt with the checkpoint's ``tokenizer.json`` (the ``tokenizers`` package),
streams the generated text to stdout as it is produced (token ids with ``--prompt-ids`` and no
tokenizer, or with ``--print-ids``), stops at the checkpoint's end-of-sequence tokens unless
``--ignore-eos``, and prints the timings (prefill, tokens/s) to stderr.

Under ``torchrun --nproc-per-node N`` (``WORLD_SIZE`` > 1) every process joins the process
group (gloo on the CPU, NCCL on the GPU, each rank on GPU ``LOCAL_RANK``), the model is
sharded over the N ranks (tensor parallelism), and only rank 0 prints.
"""
from __future__ import annotations

import os
import sys
from typing import Any

from .runtime import env


class GenerateUsageError(Exception):
    """Bad arguments or inputs (exit status 2)."""


def add_command(sub: Any) -> None:
    g = sub.add_parser("generate", help="generate text with a Qwen3 checkpoint (safetile.models.qwen3)",
                       description="Load a Hugging Face Qwen3 checkpoint directory and stream a continuation of "
                                   "the prompt; timings go to stderr.")
    g.add_argument("--model", required=True, metavar="DIR", help="checkpoint directory (config.json, *.safetensors)")
    src = g.add_mutually_exclusive_group(required=True)
    src.add_argument("--prompt", help="prompt text (needs the checkpoint's tokenizer.json)")
    src.add_argument("--prompt-ids", metavar="IDS", help="prompt token ids, comma separated: 1,2,3")
    g.add_argument("--max-new-tokens", type=int, default=64, metavar="N", help="tokens to generate (default 64)")
    g.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    g.add_argument("--dtype", default=None, help="bfloat16, float16 or float32 (default: the checkpoint's on the "
                                                 "GPU, float32 on the CPU)")
    g.add_argument("--max-seq-len", type=int, default=None, metavar="N", help="KV-cache positions")
    g.add_argument("--temperature", type=float, default=0.0, help="0 (default): greedy")
    g.add_argument("--top-k", type=int, default=0)
    g.add_argument("--top-p", type=float, default=1.0)
    g.add_argument("--seed", type=int, default=None)
    g.add_argument("--ignore-eos", action="store_true", help="do not stop at end-of-sequence tokens")
    g.add_argument("--print-ids", action="store_true", help="print token ids instead of text")


def _prompt_ids(text: str) -> list[int]:
    try:
        ids = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise GenerateUsageError(f"--prompt-ids {text!r}: expected comma-separated integers, e.g. 1,2,3") from None
    if not ids:
        raise GenerateUsageError("--prompt-ids: no token ids given")
    return ids


def _tokenizer(model_dir: str, needed: bool):
    path = os.path.join(model_dir, "tokenizer.json")
    if not os.path.exists(path):
        if needed:
            raise GenerateUsageError(f"--prompt needs {path}; give --prompt-ids instead")
        return None
    try:
        from tokenizers import Tokenizer
    except ImportError:
        if needed:
            raise GenerateUsageError("--prompt needs the tokenizers package: pip install 'safetile[models]'") from None
        return None
    return Tokenizer.from_file(path)


class _Discard:
    """Where the output of ranks other than 0 goes."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def _join_group(device: str) -> tuple[int, bool]:
    """Under torchrun (``WORLD_SIZE`` > 1): this process's rank, after joining the default process
    group unless the caller already has (then the second value is False)."""
    if env.world_size() <= 1:
        return 0, False
    import torch
    import torch.distributed as dist
    if dist.is_initialized():
        return dist.get_rank(), False
    if device.startswith("cuda"):
        torch.cuda.set_device(env.local_rank() or 0)
    dist.init_process_group("gloo" if device == "cpu" else "nccl")
    return dist.get_rank(), True


def cmd_generate(args) -> int:
    device = args.device
    if device is None:
        try:
            import torch
            device = "cuda" if torch.cuda.is_available() else "cpu"
        except ImportError:
            device = "cpu"
    rank, joined = _join_group(device)
    try:
        return _generate(args, device, sys.stdout if rank == 0 else _Discard(),
                         sys.stderr if rank == 0 else _Discard())
    except GenerateUsageError:
        if rank == 0:
            raise
        return 2  # every rank refuses alike; rank 0 says why
    finally:
        if joined:
            import torch.distributed as dist
            dist.destroy_process_group()


def _generate(args, device: str, stdout: Any, stderr: Any) -> int:
    from .models import qwen3
    if args.max_new_tokens < 0:
        raise GenerateUsageError("--max-new-tokens must be >= 0")
    tok = _tokenizer(args.model, needed=args.prompt is not None)
    ids = tok.encode(args.prompt).ids if args.prompt is not None else _prompt_ids(args.prompt_ids)
    try:
        model = qwen3.load(args.model, device=device, dtype=args.dtype, max_seq_len=args.max_seq_len or
                           max(len(ids) + args.max_new_tokens, 64))
    except (qwen3.CheckpointError, ValueError, ImportError) as e:
        raise GenerateUsageError(str(e)) from None
    stop = () if args.ignore_eos else model.config.eos_token_id
    as_ids = args.print_ids or tok is None
    out: list[int] = []
    shown = ""
    try:
        stream = model.stream(ids, args.max_new_tokens, temperature=args.temperature, top_k=args.top_k,
                              top_p=args.top_p, seed=args.seed, stop=stop)
    except ValueError as e:
        raise GenerateUsageError(str(e)) from None
    for t in stream:
        out.append(t)
        if as_ids:
            stdout.write(("" if len(out) == 1 else " ") + str(t))
        else:  # decode the whole continuation: a character may span several tokens
            text = tok.decode(out)
            if not text.endswith("\ufffd"):
                stdout.write(text[len(shown):])
                shown = text
        stdout.flush()
    stdout.write("\n")
    st = model.stats
    print(f"{st.prompt_tokens} prompt tokens, prefill {st.prefill_s * 1e3:.1f} ms "
          f"({st.prompt_tokens / max(st.prefill_s, 1e-9):.0f} tokens/s); {st.new_tokens} new tokens, decode "
          f"{st.decode_tokens_per_s:.1f} tokens/s on {model.device}"
          + (f" (tensor parallel over {model.part.world} ranks)" if model.part.parallel else ""), file=stderr)
    return 0
