10 REM longest Collatz chain below 30, with nested loops and GOTO
20 BEST = 0: ARG = 0
30 FOR S = 1 TO 29
40   N = S: L = 1
50   IF N = 1 THEN 90
60   IF N MOD 2 = 0 THEN N = N / 2 ELSE N = 3 * N + 1
70   L = L + 1
80   GOTO 50
90   IF L > BEST THEN BEST = L: ARG = S
100 NEXT S
110 PRINT "start"; ARG; "gives"; BEST; "terms"
