10 REM END and STOP in the middle of a program
20 FOR I = 1 TO 10
30   PRINT I;
40   IF I = 4 THEN PRINT: PRINT "stopping at"; I: END
50 NEXT I
60 PRINT "never printed"
