10 REM Bubble sort of names read from DATA
20 DIM N$(10)
30 FOR I = 1 TO 8: READ N$(I): NEXT I
40 FOR I = 1 TO 7
50   FOR J = 1 TO 8 - I
60     IF N$(J) > N$(J + 1) THEN SWAP N$(J), N$(J + 1)
70   NEXT J
80 NEXT I
90 FOR I = 1 TO 8: PRINT N$(I),: NEXT I
100 PRINT
110 DATA Mary, John, alice, Bob, Zoe, Anne, Mark, Ann
