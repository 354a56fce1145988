10 REM Integer division and MOD
20 FOR I = 1 TO 6
30   READ A, B
40   PRINT A; "\"; B; "="; A \ B, A; "MOD"; B; "="; A MOD B
50 NEXT I
60 PRINT 7.5 \ 2; 7.5 MOD 2; -7.5 \ 2; INT(-7.5); FIX(-7.5); CINT(-7.5); CINT(2.5)
70 DATA 17, 5, -17, 5, 17, -5, -17, -5, 100, 7, 3, 10
