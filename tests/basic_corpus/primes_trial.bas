10 REM Primes below 200 by trial division
20 C = 0
30 FOR N = 2 TO 200
40   P = 1
50   FOR D = 2 TO SQR(N)
60     IF N MOD D = 0 THEN P = 0: D = N
70   NEXT D
80   IF P = 1 THEN PRINT N;: C = C + 1
90 NEXT N
100 PRINT
110 PRINT C; "PRIMES"
