10 REM GOTO loops: countdown, a loop left by GOTO, jumping over code
20 N = 5
30 PRINT N;
40 N = N - 1
50 IF N > 0 THEN GOTO 30
60 PRINT "liftoff"
70 FOR I = 1 TO 100
80   IF I * I > 50 THEN GOTO 110
90 NEXT I
100 PRINT "not reached"
110 PRINT "first square above 50 is"; I; "squared"
120 GOTO 140
130 PRINT "skipped"
140 PRINT "done"
