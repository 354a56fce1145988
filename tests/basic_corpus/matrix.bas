10 REM 2-D local arrays: build and multiply 3x3 matrices
20 DIM A(2, 2), B(2, 2), C(2, 2)
30 FOR I = 0 TO 2: FOR J = 0 TO 2
40   A(I, J) = I + J: B(I, J) = I - J
50 NEXT J: NEXT I
60 FOR I = 0 TO 2
70   FOR J = 0 TO 2
80     S = 0
90     FOR K = 0 TO 2: S = S + A(I, K) * B(K, J): NEXT K
100    C(I, J) = S
110  NEXT J
120 NEXT I
130 FOR I = 0 TO 2: PRINT C(I, 0); C(I, 1); C(I, 2): NEXT I
