10 REM Binary search in a sorted list
20 DIM A(20)
30 FOR I = 1 TO 20: A(I) = I * I - 3 * I: NEXT I
40 FOR K = 1 TO 5
50   READ T
60   L = 1: H = 20: F = 0
70   WHILE L <= H AND F = 0
80     M = (L + H) \ 2
90     IF A(M) = T THEN F = M ELSE IF A(M) < T THEN L = M + 1 ELSE H = M - 1
100  WEND
110  IF F THEN PRINT T; "AT"; F ELSE PRINT T; "NOT FOUND"
120 NEXT K
130 DATA 0, 70, 340, 5, -2
