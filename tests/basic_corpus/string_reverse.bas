10 REM Reverse strings
20 READ N
30 FOR K = 1 TO N
40   READ S$
50   R$ = ""
60   FOR I = LEN(S$) TO 1 STEP -1
70     R$ = R$ + MID$(S$, I, 1)
80   NEXT I
90   PRINT S$; " -> "; R$
100 NEXT K
110 DATA 4, HELLO, "GW-BASIC", A man a plan, 12345
