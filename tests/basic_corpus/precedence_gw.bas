10 REM Operator precedence and associativity
20 PRINT 2 ^ 3 ^ 2; -2 ^ 2; (-2) ^ 2; 2 ^ -1; 2 * 3 ^ 2
30 PRINT 10 - 4 - 3; 100 / 10 / 5; 7 \ 2 * 2; 10 MOD 4 * 2; 10 \ 3 MOD 2
40 PRINT NOT 5 = 5; NOT 0; 5 AND 3; 5 OR 3; 5 XOR 3; 5 EQV 3; 5 IMP 3
50 PRINT 1 < 2 = -1; 3 > 2 > 1; "A" < "B"; 2 + 3 * 4 - 6 / 2
