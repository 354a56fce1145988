10 REM operator precedence and arithmetic rules
20 PRINT -2 ^ 2, 2 ^ 3 ^ 2, 2 ^ -1, (-2) ^ 2
30 PRINT 2 + 3 * 4, (2 + 3) * 4, 10 - 4 - 3, 100 / 10 / 5
40 PRINT 7 MOD 3, -7 MOD 3, 7 MOD -3, 7.5 MOD 2
50 PRINT 7 \ 2, -7 \ 2, 10 MOD 4 * 2, 10 \ 3 * 2
60 PRINT INT(3.7), INT(-3.7), FIX(-3.7), INT(-3)
70 PRINT 1 + 2 = 3, 2 > 3, NOT 0, NOT -1
80 PRINT 5 AND 3, 5 OR 3, 5 XOR 3, 3 > 2 AND 2 > 1
90 PRINT 1 / 3, 2 / 3 * 3, 10 / 4
100 PRINT 2 * -3, -3 * -3, 4 - -1
110 PRINT 1E3 + 1, 3E-2, 12345678
