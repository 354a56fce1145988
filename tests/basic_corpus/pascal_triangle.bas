10 REM Pascal's triangle
20 DIM R(12)
30 R(0) = 1
40 FOR N = 0 TO 10
50   PRINT TAB(30 - 3 * N);
60   FOR K = 0 TO N: PRINT RIGHT$("     " + STR$(R(K)), 6); : NEXT K
70   PRINT
80   FOR K = N + 1 TO 1 STEP -1: R(K) = R(K) + R(K - 1): NEXT K
90 NEXT N
