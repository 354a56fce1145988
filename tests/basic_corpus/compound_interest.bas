10 REM Compound interest
20 P = 1000: R = .05
30 PRINT "YEAR", "BALANCE", "INTEREST"
40 FOR Y = 1 TO 10
50   I = P * R
60   P = P + I
70   PRINT Y, INT(P * 100 + .5) / 100, INT(I * 100 + .5) / 100
80 NEXT Y
