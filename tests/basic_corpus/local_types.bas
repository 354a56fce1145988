10 REM local arrays with declared element types
20 DIM H(3) AS HALF, K%(3), D(2) AS DOUBLE
30 H(1) = 1 / 3: K%(2) = 2.6: D(0) = 1 / 3
40 PRINT H(1); K%(2); D(0)
50 H(2) = 65504 * 2
60 PRINT H(2)
