10 REM blocks take different paths through loops, GOSUB and GOTO
20 DIM C(40)
30 TILE C(8)
40 N = 0
50 FOR I = 1 TO BID + 1
60   GOSUB 200
70 NEXT I
80 C(BID) = N
90 IF BID MOD 2 = 0 THEN 120
100 PRINT "odd block"; BID; "N ="; N
110 GOTO 130
120 PRINT "even block"; BID; "N ="; N
130 END
200 N = N + I * 10
210 RETURN
220 OUTPUT C
