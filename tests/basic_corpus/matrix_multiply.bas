10 REM 3x3 matrix product
20 DIM A(3, 3), B(3, 3), C(3, 3)
30 FOR I = 1 TO 3: FOR J = 1 TO 3: READ A(I, J): NEXT J: NEXT I
40 FOR I = 1 TO 3: FOR J = 1 TO 3: READ B(I, J): NEXT J: NEXT I
50 FOR I = 1 TO 3
60   FOR J = 1 TO 3
70     S = 0
80     FOR K = 1 TO 3: S = S + A(I, K) * B(K, J): NEXT K
90     C(I, J) = S
100  NEXT J
110 NEXT I
120 FOR I = 1 TO 3
130   FOR J = 1 TO 3: PRINT C(I, J),: NEXT J
140   PRINT
150 NEXT I
160 DATA 1, 2, 3, 4, 5, 6, 7, 8, 9
170 DATA 9, 8, 7, 6, 5, 4, 3, 2, 1.5
