10 REM VAL and STR$ round trips
20 FOR I = 1 TO 8
30   READ X$
40   V = VAL(X$): S$ = STR$(V)
50   PRINT X$; " ->"; V; "-> "; S$; LEN(S$)
60 NEXT I
70 DATA "3.25", "-0.5", "1E3", "  42  ", "1.5E-5", "100000000", ".000123", "7 7 7"
