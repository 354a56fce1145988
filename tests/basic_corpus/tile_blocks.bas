10 REM every block prints; on the CPU backend the output comes in block order
20 DIM C(64)
30 TILE C(16)
40 C(BID) = BID
50 PRINT "block"; BID; "of 4"
60 OUTPUT C
