10 S$ = "GW-BASIC INTERPRETER"
20 PRINT LEFT$(S$, 8); "|"; RIGHT$(S$, 11); "|"; MID$(S$, 4, 5); "|"; MID$(S$, 10)
30 PRINT LEN(S$); ASC(S$); CHR$(65); CHR$(97)
40 PRINT STR$(42); STR$(-3.5); "|"; VAL("123.5"); VAL(" -7E2 "); VAL("12ABC"); VAL("ABC")
50 PRINT LEFT$(S$, 0); "|"; LEFT$(S$, 100); "|"; MID$(S$, 30); "|"; RIGHT$("", 3); "|"
60 N$ = "": FOR I = 1 TO 5: N$ = N$ + CHR$(48 + I): NEXT I: PRINT N$; VAL(N$) * 2
70 PRINT "ABC" = "ABC"; "ABC" < "ABD"; "AB" < "ABC"; "B" > "ABC"; "" < "A"
