10 REM User functions
20 DEF FNA(R) = 3.14159 * R * R
30 DEF FNC(X) = X * X * X - 2 * X + 1
40 DEF FNU$(S$) = S$ + "!" + S$
50 DEF FNR = INT(RND * 10)
60 FOR R = 1 TO 4: PRINT R, FNA(R), FNC(R): NEXT R
70 PRINT FNU$("HI"); " "; FNU$(FNU$("A"))
80 X = 100: PRINT FNC(2); X
90 PRINT FNR; FNR; FNR
