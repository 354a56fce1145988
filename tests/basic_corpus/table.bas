10 REM multiplication table with print zones
20 FOR I = 1 TO 4
30   FOR J = 1 TO 4
40     PRINT I * J,
50   NEXT J
60   PRINT
70 NEXT I
