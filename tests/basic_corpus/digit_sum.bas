10 REM Digit sums and digital roots
20 FOR K = 1 TO 5
30   READ N: S = 0: M = N
40   WHILE M > 0: S = S + M MOD 10: M = M \ 10: WEND
50   R = S
60   WHILE R > 9: T = 0: WHILE R > 0: T = T + R MOD 10: R = R \ 10: WEND: R = T: WEND
70   PRINT N, S, R
80 NEXT K
90 DATA 12345, 999, 1000, 31415, 27
