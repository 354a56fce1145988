"""Kill tests of mutation testing's sixth pass (bench/NOTES.md, "Mutation testing (issue 9), sixth
pass"): each checks user-visible behaviour that a surviving mutant of ``safetile.safe`` changed."""
from __future__ import annotations
