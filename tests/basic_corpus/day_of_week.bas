10 REM Day of the week by Zeller's congruence
20 DIM D$(6)
30 FOR I = 0 TO 6: READ D$(I): NEXT I
40 FOR K = 1 TO 5
50   READ Y, M, D
60   IF M < 3 THEN M1 = M + 12: Y1 = Y - 1 ELSE M1 = M: Y1 = Y
70   H = (D + INT(13 * (M1 + 1) / 5) + Y1 + INT(Y1 / 4) - INT(Y1 / 100) + INT(Y1 / 400)) MOD 7
80   PRINT Y; "-"; M; "-"; D; "IS A "; D$(H)
90 NEXT K
100 DATA SATURDAY, SUNDAY, MONDAY, TUESDAY, WEDNESDAY, THURSDAY, FRIDAY
110 DATA 1969, 7, 20, 2000, 1, 1, 1985, 10, 26, 2024, 2, 29, 1776, 7, 4
