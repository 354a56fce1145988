10  REM Hello World in BASIC
20  PRINT "Hello, World!"
30  LET X = 42.0
40  LET Y = X * 2.0
50  PRINT "X = "; X
60  PRINT "Y = "; Y
70  IF Y > 80 THEN
80    PRINT "Y is large"
90  ELSE
100   PRINT "Y is small"
110 ENDIF
120 FOR I = 1 TO 5
130   PRINT "I = "; I
140 NEXT I
150 END
