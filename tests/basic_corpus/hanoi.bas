10 REM towers of Hanoi with recursive GOSUB and an explicit stack in arrays
20 DIM N(20), F(20), T(20), V(20)
30 SP = 1: N(1) = 3: F(1) = 1: T(1) = 3: V(1) = 2: M = 0
40 GOSUB 100
50 PRINT "moves:"; M
60 END
100 IF N(SP) = 0 THEN RETURN
110 SP = SP + 1: N(SP) = N(SP - 1) - 1: F(SP) = F(SP - 1): T(SP) = V(SP - 1): V(SP) = T(SP - 1)
120 GOSUB 100
130 SP = SP - 1
140 M = M + 1: PRINT "move"; F(SP); "to"; T(SP)
150 SP = SP + 1: N(SP) = N(SP - 1) - 1: F(SP) = V(SP - 1): T(SP) = T(SP - 1): V(SP) = F(SP - 1)
160 GOSUB 100
170 SP = SP - 1
180 RETURN
