10 REM Integer variables hold -32768..32767
20 A% = 32000
30 FOR I = 1 TO 10
40   A% = A% + 100
50   PRINT A%;
60 NEXT I
