10 REM bubble sort of DATA in a local array
20 N = 8
30 DIM A(8)
40 FOR I = 1 TO N: READ A(I): NEXT I
50 FOR I = 1 TO N - 1
60   FOR J = 1 TO N - I
70     IF A(J) > A(J + 1) THEN T = A(J): A(J) = A(J + 1): A(J + 1) = T
80   NEXT J
90 NEXT I
100 FOR I = 1 TO N: PRINT A(I);: NEXT I
110 PRINT
120 DATA 5, 3.5, 9, -2, 0, 7, 1, 3
