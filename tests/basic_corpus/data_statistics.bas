10 REM Mean, min, max and standard deviation of DATA
20 N = 0: S = 0: Q = 0: MX = -1E30: MN = 1E30
30 READ X
40 IF X = -999 THEN 90
50 N = N + 1: S = S + X: Q = Q + X * X
60 IF X > MX THEN MX = X
70 IF X < MN THEN MN = X
80 GOTO 30
90 M = S / N
100 PRINT "COUNT"; N, "MEAN"; M
110 PRINT "MIN"; MN, "MAX"; MX
120 PRINT "STD DEV"; SQR(Q / N - M * M)
130 DATA 23.5, 19, 31.25, 27, 22, 18.75, 30, 25.5, 21, 26, -999
