10 REM Monthly payment of a loan
20 DEF FNP(A, R, N) = A * R / (1 - (1 + R) ^ (-N))
30 FOR K = 1 TO 3
40   READ A, Y, RATE
50   M = FNP(A, RATE / 1200, Y * 12)
60   PRINT "LOAN"; A; "OVER"; Y; "YEARS AT"; RATE; "%: PAYMENT"; INT(M * 100 + .5) / 100
70 NEXT K
80 DATA 10000, 5, 6, 150000, 30, 4.5, 2500, 2, 12
