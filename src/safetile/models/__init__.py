"""Real models built on safetile's public API, the way a user would build them.

``safetile.models.qwen3``: a batch-1 Qwen3 inference engine (Hugging Face checkpoints,
prefill, a decode step captured once as a graph and replayed per token, sampling and
streaming). It needs the optional extra ``models`` (``pip install 'safetile[models]'``:
safetensors, tokenizers), imported only when a checkpoint or tokenizer is read.
"""
