10 REM Triangles and a diamond
20 FOR I = 1 TO 5: PRINT STRING$(I, "*"): NEXT I
30 FOR I = 4 TO 1 STEP -1: PRINT SPACE$(5 - I); STRING$(I, "#"): NEXT I
40 FOR I = 1 TO 4: PRINT TAB(6 - I); STRING$(2 * I - 1, "+"): NEXT I
50 FOR I = 3 TO 1 STEP -1: PRINT TAB(6 - I); STRING$(2 * I - 1, "+"): NEXT I
