10 REM Factorials in single precision
20 F = 1
30 FOR N = 1 TO 20
40   F = F * N
50   PRINT N, F
60 NEXT N
