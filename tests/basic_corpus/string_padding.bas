10 REM Centering and padding text
20 W = 30
30 FOR I = 1 TO 4
40   READ T$
50   P = (W - LEN(T$)) \ 2
60   PRINT "|"; SPACE$(P); T$; SPACE$(W - P - LEN(T$)); "|"
70 NEXT I
80 PRINT "+"; STRING$(W, "-"); "+"
90 PRINT STRING$(5, 42); STRING$(3, "AB")
100 DATA TITLE, A LONGER LINE OF TEXT, X, "  SPACED  "
