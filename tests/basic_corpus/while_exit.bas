10 REM WHILE/WEND: a real exit, nesting, a loop that never runs
20 N = 27: S = 0
30 WHILE N <> 1
40   IF N MOD 2 = 0 THEN N = N / 2 ELSE N = 3 * N + 1
50   S = S + 1
60 WEND
70 PRINT "27 reaches 1 in"; S; "steps"
80 I = 0
90 WHILE I < 3
100   J = 0
110   WHILE J < I
120     PRINT "("; I; J; ")";
130     J = J + 1
140   WEND
150   I = I + 1
160 WEND
170 PRINT
180 WHILE 0
190   PRINT "never"
200 WEND
210 K = 1
220 WHILE K < 1000: K = K * 2: WEND
230 PRINT "first power of two from 1000:"; K
