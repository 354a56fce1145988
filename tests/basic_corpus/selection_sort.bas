10 REM Selection sort
20 DIM A(12)
30 FOR I = 1 TO 12: READ A(I): NEXT I
40 FOR I = 1 TO 11
50   M = I
60   FOR J = I + 1 TO 12
70     IF A(J) < A(M) THEN M = J
80   NEXT J
90   T = A(I): A(I) = A(M): A(M) = T
100 NEXT I
110 FOR I = 1 TO 12: PRINT A(I);: NEXT I: PRINT
120 DATA 34, -2, 7.5, 100, 0, 3, 3, -17.25, 8, 1E3, .001, 42
