10 REM Decimal to binary
20 FOR K = 1 TO 6
30   READ N
40   B$ = "": M = N
50   IF M = 0 THEN B$ = "0"
60   WHILE M > 0
70     B$ = STR$(M MOD 2) + B$
80     M = M \ 2
90   WEND
100  PRINT N; "="; B$
110 NEXT K
120 DATA 0, 1, 5, 10, 255, 1024
