10 REM GCD and LCM with DEF FN and a subroutine
20 DEF FNL(A, B, G) = A * B / G
30 FOR K = 1 TO 5
40   READ A, B
50   X = A: Y = B: GOSUB 200
60   PRINT "GCD("; A; ","; B; ") ="; X, "LCM ="; FNL(A, B, X)
70 NEXT K
80 END
200 WHILE Y <> 0
210   R = X MOD Y: X = Y: Y = R
220 WEND
230 RETURN
300 DATA 12, 18, 100, 75, 17, 5, 1071, 462, 36, 48
