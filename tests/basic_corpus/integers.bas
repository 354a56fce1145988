10 REM integer variables: % suffix, rounding on assignment, integer arithmetic
20 A% = 7.4: B% = 7.5: C% = -2.5: D% = 2.49
30 PRINT A%; B%; C%; D%
40 E% = 17: F% = 5
50 PRINT E% / F%, E% \ F%, E% MOD F%, -E% \ F%
60 G% = 2147483647: PRINT G%
70 H% = 123456789: PRINT H%, H% * 1.0
80 X = 123456789: PRINT X
90 I% = 10: I% = I% / 4: PRINT I%
100 J% = 3: K = J% / 2: PRINT K
110 PRINT 20000000, 20000000 + J%
