10 REM FOR with negative, fractional and zero-trip steps; the variable after a loop
20 FOR I = 10 TO 1 STEP -3: PRINT I;: NEXT I: PRINT "| after:"; I
30 FOR X = 0 TO 1 STEP 0.25: PRINT X;: NEXT X: PRINT "| after:"; X
40 FOR X = 1 TO 0 STEP -0.5: PRINT X;: NEXT X: PRINT "| after:"; X
50 FOR I = 5 TO 1: PRINT "never";: NEXT I: PRINT "zero trips, I ="; I
60 FOR I = 1 TO 3
70   FOR J = I TO 1 STEP -1
80     PRINT I * 10 + J;
90   NEXT J
100 NEXT I
110 PRINT
120 S = 2
130 FOR K = 1 TO 10 STEP S: S = 5: PRINT K;: NEXT K
140 PRINT
150 FOR I% = 1 TO 7 STEP 2: PRINT I%;: NEXT: PRINT I%
160 FOR X = 0 TO 1 STEP 0.1: C = C + 1: NEXT: PRINT "0 TO 1 STEP 0.1 runs"; C; "times"
