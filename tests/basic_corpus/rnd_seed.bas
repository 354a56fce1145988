10 REM RND: reproducible from the seed; RND(0) repeats; RND(-x) reseeds
20 FOR I = 1 TO 3: PRINT RND;: NEXT: PRINT
30 R = RND(1): PRINT R; RND(0); RND(0) = R
40 A = RND(-5): B = RND(1)
50 C = RND(-5): D = RND(1)
60 PRINT A = C; B = D
70 RANDOMIZE 42
80 X = RND: RANDOMIZE 42: PRINT X = RND
90 N = 0
100 FOR I = 1 TO 200
110   V = RND
120   IF V < 0 OR V >= 1 THEN PRINT "out of range"
130   IF V < 0.5 THEN N = N + 1
140 NEXT I
150 PRINT "below one half:"; N
160 PRINT INT(RND * 6) + 1; INT(RND * 6) + 1; INT(RND * 6) + 1
