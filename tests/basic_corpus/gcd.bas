10 REM greatest common divisor by Euclid's algorithm in a subroutine
20 FOR K = 1 TO 4
30   READ A, B
40   GOSUB 100
50   PRINT "gcd("; A; ","; B; ") ="; G
60 NEXT K
70 END
100 X = A: Y = B
110 IF Y = 0 THEN G = X: RETURN
120 R = X MOD Y: X = Y: Y = R
130 GOTO 110
200 DATA 48, 18, 17, 5, 100, 75, 81, 27
