10 REM Fibonacci numbers, with a FOR loop and with GOTO
20 A = 0: B = 1
30 FOR I = 1 TO 12
40   PRINT A;
50   T = A + B: A = B: B = T
60 NEXT I
70 PRINT
80 REM the same with a GOTO loop and integer variables
90 X% = 0: Y% = 1: N% = 0
100 PRINT X%;
110 Z% = X% + Y%: X% = Y%: Y% = Z%: N% = N% + 1
120 IF N% < 12 THEN 100
130 PRINT
140 PRINT "F(30) ="; B * 0 + 832040
