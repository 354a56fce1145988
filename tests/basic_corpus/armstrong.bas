10 REM Armstrong numbers with three digits
20 FOR N = 100 TO 999
30   A = N \ 100: B = (N \ 10) MOD 10: C = N MOD 10
40   IF A ^ 3 + B ^ 3 + C ^ 3 = N THEN PRINT N;
50 NEXT N
60 PRINT
