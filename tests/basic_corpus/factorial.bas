10 REM factorials in single precision: exponent form once they need it
20 F = 1
30 FOR N = 1 TO 15
40   F = F * N
50   PRINT N, F
60 NEXT N
