10 REM Sine and cosine table
20 PI = 4 * ATN(1)
30 FOR D = 0 TO 360 STEP 30
40   R = D * PI / 180
50   PRINT D, SIN(R), COS(R), TAN(R)
60 NEXT D
