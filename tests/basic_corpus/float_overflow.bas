10 REM A float overflow is a warning too
20 X = 1E30
30 FOR I = 1 TO 4
40   X = X * 1000
50   PRINT I; X
60 NEXT I
70 PRINT EXP(100)
80 PRINT "END"
