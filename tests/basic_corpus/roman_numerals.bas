10 REM Roman numerals
20 DIM V(13), R$(13)
30 FOR I = 1 TO 13: READ V(I), R$(I): NEXT I
40 FOR K = 1 TO 7
50   READ N: M = N: S$ = ""
60   FOR I = 1 TO 13
70     WHILE M >= V(I): S$ = S$ + R$(I): M = M - V(I): WEND
80   NEXT I
90   PRINT N; S$
100 NEXT K
110 DATA 1000, M, 900, CM, 500, D, 400, CD, 100, C, 90, XC, 50, L, 40, XL, 10, X, 9, IX, 5, V, 4, IV, 1, I
120 DATA 1, 4, 9, 14, 1987, 2024, 3999
