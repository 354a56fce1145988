10 REM Division by zero is a warning; the program goes on
20 A = 5: B = 0
30 PRINT "RATIO"; A / B
40 PRINT "INT DIV"; A \ B; "MOD"; -A MOD B
50 C = -A / B: PRINT "NEGATIVE"; C
60 PRINT 0 ^ -1
70 PRINT "STILL RUNNING"
