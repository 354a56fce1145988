10 REM STOP inside a subroutine ends the program
20 FOR I = 1 TO 5
30   GOSUB 100
40 NEXT I
50 PRINT "not reached"
100 PRINT "call"; I
110 IF I = 3 THEN STOP
120 RETURN
