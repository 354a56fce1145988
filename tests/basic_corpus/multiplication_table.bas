10 REM Multiplication table with TAB
20 FOR I = 1 TO 9
30   FOR J = 1 TO 9
40     PRINT TAB(J * 5 - 3); I * J;
50   NEXT J
60   PRINT
70 NEXT I
