10 REM Prime factorization
20 FOR K = 1 TO 6
30   READ N: M = N: F$ = ""
40   D = 2
50   WHILE M > 1
60     IF M MOD D = 0 THEN F$ = F$ + STR$(D): M = M / D ELSE D = D + 1
70   WEND
80   PRINT N; "="; F$
90 NEXT K
100 DATA 12, 97, 360, 1001, 899, 30030
