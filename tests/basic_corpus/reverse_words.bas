10 REM Reverse the words of a sentence
20 S$ = "THE RAIN IN SPAIN STAYS MAINLY IN THE PLAIN"
30 R$ = "": W$ = ""
40 FOR I = 1 TO LEN(S$)
50   C$ = MID$(S$, I, 1)
60   IF C$ = " " THEN R$ = W$ + " " + R$: W$ = "" ELSE W$ = W$ + C$
70 NEXT I
80 R$ = W$ + " " + R$
90 PRINT R$
100 PRINT LEN(R$); "CHARACTERS"
