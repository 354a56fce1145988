10 REM Two dice, 600 throws
20 DIM H(12)
30 FOR I = 1 TO 600
40   D = INT(RND * 6) + INT(RND * 6) + 2
50   H(D) = H(D) + 1
60 NEXT I
70 FOR D = 2 TO 12
80   PRINT D;
90   PRINT TAB(6); STRING$(H(D) \ 4, "*"); H(D)
100 NEXT D
