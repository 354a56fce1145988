10 REM Count solutions of the N queens problem for N = 6
20 N = 6: DIM Q(8): S = 0: R = 1: Q(1) = 0
30 Q(R) = Q(R) + 1
40 IF Q(R) > N THEN R = R - 1: IF R = 0 THEN 100 ELSE 30
50 FOR I = 1 TO R - 1
60   IF Q(I) = Q(R) OR ABS(Q(I) - Q(R)) = R - I THEN 30
70 NEXT I
80 IF R = N THEN S = S + 1: IF S = 1 THEN FOR I = 1 TO N: PRINT Q(I);: NEXT I: PRINT
90 IF R < N THEN R = R + 1: Q(R) = 0
95 GOTO 30
100 PRINT S; "SOLUTIONS"
