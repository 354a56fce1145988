10 REM Towers of Hanoi with an explicit stack
20 DIM N(20), F(20), T(20), U(20), S(20)
30 P = 1: N(1) = 4: F(1) = 1: T(1) = 3: U(1) = 2: S(1) = 0: M = 0
40 IF P = 0 THEN 200
50 IF N(P) = 0 THEN P = P - 1: GOTO 40
60 IF S(P) = 0 THEN S(P) = 1: N(P + 1) = N(P) - 1: F(P + 1) = F(P): T(P + 1) = U(P): U(P + 1) = T(P): S(P + 1) = 0: P = P + 1: GOTO 40
70 IF S(P) = 1 THEN S(P) = 2: M = M + 1: PRINT "MOVE"; M; ":"; F(P); "->"; T(P): N(P + 1) = N(P) - 1: F(P + 1) = U(P): T(P + 1) = T(P): U(P + 1) = F(P): S(P + 1) = 0: P = P + 1: GOTO 40
80 P = P - 1: GOTO 40
200 PRINT M; "MOVES"
