10 REM single-line IF/THEN/ELSE: every statement after THEN is conditional
20 FOR I = 1 TO 4
30   IF I = 2 THEN PRINT "two";: PRINT " (still two)" ELSE PRINT I; "is not two"
40 NEXT I
50 X = 5
60 IF X > 3 THEN IF X > 4 THEN PRINT "x > 4" ELSE PRINT "3 < x <= 4"
70 IF X < 3 THEN PRINT "no": PRINT "no again"
80 PRINT "after"
90 IF X THEN PRINT "nonzero is true"
100 IF 0 THEN PRINT "zero is true" ELSE PRINT "zero is false"
110 IF X = 5 AND X < 10 THEN PRINT "and works"
120 IF X = 1 OR X = 5 THEN PRINT "or works"
130 IF NOT X = 1 THEN PRINT "not works"
140 IF X > 1 THEN 160
150 PRINT "skipped"
160 IF X < 1 THEN 150 ELSE PRINT "else branch of THEN n"
