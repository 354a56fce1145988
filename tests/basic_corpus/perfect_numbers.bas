10 REM Perfect numbers below 500
20 FOR N = 2 TO 500
30   S = 1
40   FOR D = 2 TO SQR(N)
50     IF N MOD D = 0 THEN S = S + D: IF D * D <> N THEN S = S + N / D
60   NEXT D
70   IF S = N THEN PRINT N; "IS PERFECT"
80 NEXT N
