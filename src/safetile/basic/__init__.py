"""The BASIC front end: classic line-numbered BASIC plus tile extensions, compiled to the
safetile IR and run on the CPU (NumPy) or GPU (Triton) backend.

>>> from safetile.basic import compile_program
>>> prog = compile_program('10 PRINT "HELLO"; 6 * 7')
>>> prog.run()          # PRINT output goes to stdout; the OUTPUT arrays are returned
HELLO 42 
{}

Run-time failures (RETURN without GOSUB, out of DATA, subscript out of range ...) raise
``safetile.TileRuntimeError`` naming the BASIC line. See ``docs/basic.md`` for the language.
"""
from .errors import BasicError
from .program import (BasicInputError, BasicKernel, BasicProgram, Parameter, compile_file, compile_program,
                      dump, launch)

__all__ = ["BasicError", "BasicInputError", "BasicKernel", "BasicProgram", "Parameter",
           "compile_program", "compile_file", "dump", "launch"]
