10 REM The classic greeting
20 PRINT "HELLO, WORLD!"
30 PRINT "Hello";", ";"world";"!"
40 END
