10 REM variables first set inside loops and branches keep their values afterwards
20 FOR I = 1 TO 4
30   T = I * 10
40   IF I = 2 THEN U = 99
50 NEXT I
60 PRINT "T ="; T; " U ="; U; " I ="; I
70 K = 0
80 WHILE K < 3
90   K = K + 1
100  LAST = K * K
110 WEND
120 PRINT "LAST ="; LAST
130 FOR I = 1 TO 3: S = S + I: NEXT: PRINT "S ="; S
140 IF S > 5 THEN V = 1 ELSE W = 2
150 PRINT V; W
