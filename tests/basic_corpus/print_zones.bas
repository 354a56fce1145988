10 REM PRINT: ; joins, , moves to 14-column zones, trailing ; and , keep the line open
20 PRINT "A", "B", "C"
30 PRINT 1, -2, 3.5
40 PRINT "X="; 5, "Y="; -6
50 PRINT , "second zone"
60 PRINT "ABCDEFGHIJKLMN", "after a full zone"
70 PRINT 1; 2; 3
80 PRINT "no newline";
90 PRINT " - continued"
100 PRINT "zone then",
110 PRINT "next statement"
120 PRINT 1.5E+10, 123456789, 0.000012345, -0.5
130 PRINT TAB(6); "tab"; TAB(3); "x"; SPC(2); "spc"
140 PRINT "x"; 1E7;"y"
150 PRINT
160 PRINT "a";"b";"c"
170 FOR I = 1 TO 3: PRINT I, I * I, I * I * I: NEXT
180 ? "question mark prints"
