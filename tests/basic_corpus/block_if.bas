10 REM block IF / ELSEIF / ELSE / ENDIF, nested, with END IF spelled two ways
20 FOR I = 1 TO 5
30   IF I = 1 THEN
40     PRINT "one"
50   ELSEIF I = 2 THEN
60     PRINT "two"
70   ELSEIF I < 5 THEN
80     IF I = 3 THEN
90       PRINT "three"
100    ELSE
110      PRINT "four"
120    END IF
130  ELSE
140    PRINT "five"
150  ENDIF
160 NEXT I
170 Y = 84
180 IF Y > 80 THEN
190   PRINT "Y is large"
200 ELSE
210   PRINT "Y is small"
220 ENDIF
