10 REM Pig latin
20 FOR K = 1 TO 6
30   READ W$
40   V = 0
50   FOR I = 1 TO LEN(W$)
60     IF V = 0 AND INSTR("AEIOU", MID$(W$, I, 1)) > 0 THEN V = I
70   NEXT I
80   IF V = 1 THEN P$ = W$ + "WAY" ELSE P$ = MID$(W$, V) + LEFT$(W$, V - 1) + "AY"
90   PRINT W$; " -> "; P$
100 NEXT K
110 DATA PIG, LATIN, APPLE, STRING, EGG, THREE
