10 REM DATA/READ: sums, READ inside loops, RESTORE and RESTORE n
20 S = 0
30 FOR I = 1 TO 5
40   READ X
50   S = S + X
60 NEXT I
70 PRINT "sum of five:"; S
80 READ A, B
90 PRINT "next two:"; A; B
100 RESTORE
110 READ A
120 PRINT "after RESTORE:"; A
130 RESTORE 500
140 READ A, B, C
150 PRINT "from line 500:"; A; B; C
160 N = 0: T = 0
170 RESTORE 500
180 READ V
190 IF V < 0 THEN 220
200 T = T + V: N = N + 1
210 GOTO 180
220 PRINT N; "values before the end mark, total"; T
400 DATA 1, 2, 3.5
410 DATA -4, 10, 100, 200
500 DATA 7, 8, 9, 2.25, -1
