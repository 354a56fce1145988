10 REM Subroutines: GOSUB/RETURN, nested calls, a subroutine called from a loop
20 FOR I = 1 TO 3
30   X = I: GOSUB 200
40   PRINT "square of"; I; "is"; Y
50 NEXT I
60 GOSUB 300
70 PRINT "back in main"
80 END
200 REM square X into Y
210 Y = X * X
220 RETURN
300 PRINT "outer sub"
310 X = 7: GOSUB 200
320 PRINT "inner gave"; Y
330 RETURN
