"""The BASIC front end: classic line-numbered BASIC plus tile extensions, compiled to the
safetile IR and run on the CPU (NumPy) or GPU (Triton) backend.

>>> from safetile.basic import compile_program
>>> prog = compile_program('10 PRINT "HELLO"; 6 * 7')
>>> prog.run()          # prints: HELLO 42
{}

See ``docs/basic.md`` for the language.
"""
from .errors import BasicError, BasicRuntimeError
from .program import (BasicInputError, BasicKernel, BasicProgram, Parameter, compile_file, compile_program,
                      dump, launch)

__all__ = ["BasicError", "BasicRuntimeError", "BasicInputError", "BasicKernel", "BasicProgram", "Parameter",
           "compile_program", "compile_file", "dump", "launch"]
