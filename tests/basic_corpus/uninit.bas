10 REM uninitialised variables and array elements read 0
20 PRINT X; Y%; Z
30 DIM A(5), B%(3)
40 PRINT A(0); A(5); B%(2)
50 X = X + 1: Y% = Y% - 1
60 PRINT X; Y%
70 A(2) = A(2) + 7
80 PRINT A(2); A(1)
