10 REM Sieve of Eratosthenes with a local array; GOTO to a NEXT line skips a number
20 DIM F(100)
30 C = 0
40 FOR I = 2 TO 100
50   IF F(I) = 1 THEN 90
60   PRINT I;: C = C + 1
70   FOR J = I * I TO 100 STEP I: F(J) = 1: NEXT J
90 NEXT I
100 PRINT
110 PRINT C; "primes below 100"
