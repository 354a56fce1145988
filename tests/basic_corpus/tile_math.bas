10 REM tile variables: scalar broadcasting, element-wise maths, SUM reduces a tile
20 DIM C(32)
30 TILE C(8), T(8)
40 T = 2
50 C(BID) = T * 3 + BID
60 PRINT BID; SUM(C(BID)); SUM(T ^ 2); SUM(SQR(T * 8))
70 IF BID = 3 THEN PRINT "last block"
80 OUTPUT C
