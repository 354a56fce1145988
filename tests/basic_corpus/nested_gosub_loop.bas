10 REM GOSUB from inside nested loops; the subroutine uses its own loop
20 FOR I = 1 TO 3
30   FOR J = 1 TO 2
40     GOSUB 100
50   NEXT J
60 NEXT I
70 PRINT "total"; T
80 END
100 FOR K = 1 TO I: T = T + J: NEXT K
110 RETURN
