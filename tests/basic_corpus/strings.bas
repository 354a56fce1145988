10 REM string literals: % and : inside strings are ordinary text; REM and ' comments
20 PRINT "100% sure"
30 PRINT "a:b"; ":c"
40 PRINT "%d %s %% %f"
50 PRINT "'not a comment'" ' this is a comment
60 PRINT ""; "empty first"
70 PRINT "tab	inside"
80 REM PRINT "never"
90 PRINT "rates:"; 5; "%"
