10 A = 1: B = 2: A$ = "LEFT": B$ = "RIGHT"
20 SWAP A, B: SWAP A$, B$
30 PRINT A; B; A$; " "; B$
40 DIM X(3): X(1) = 10: X(3) = 30
50 SWAP X(1), X(3): PRINT X(1); X(3)
