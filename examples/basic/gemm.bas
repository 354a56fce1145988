10  REM GEMM: C(M,N) = A(M,K) * B(K,N)
15  REM (cutile-basic's example, with ceiling divisions so any M, N, K work)
20  INPUT M, N, K, A(), B()
30  DIM A(M, K), B(K, N), C(M, N)
40  TILE A(128, 32), B(32, 128), C(128, 128), ACC(128, 128)
50  LET TILEM = INT(BID / INT((N + 127) / 128))
60  LET TILEN = BID MOD INT((N + 127) / 128)
70  LET ACC = 0.0
80  FOR KI = 0 TO INT((K + 31) / 32) - 1
90    LET ACC = MMA(A(TILEM, KI), B(KI, TILEN), ACC)
100 NEXT KI
110 LET C(TILEM, TILEN) = ACC
120 OUTPUT C
130 END
