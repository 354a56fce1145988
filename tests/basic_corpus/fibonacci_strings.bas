10 REM Fibonacci numbers joined into one string
20 A = 1: B = 1: S$ = "1, 1"
30 FOR I = 3 TO 15
40   C = A + B: A = B: B = C
50   S$ = S$ + ", " + MID$(STR$(C), 2)
60 NEXT I
70 PRINT S$
80 PRINT "LENGTH"; LEN(S$)
