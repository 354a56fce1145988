10 REM Square roots and squares
20 PRINT "N", "SQR(N)", "N^2", "N^.5"
30 FOR N = 1 TO 12
40   PRINT N, SQR(N), N ^ 2, N ^ .5
50 NEXT N
