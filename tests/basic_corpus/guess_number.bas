10 REM The computer guesses a number by halving
20 RANDOMIZE 7
30 S = INT(RND * 100) + 1
40 LO = 1: HI = 100: T = 0
50 G = (LO + HI) \ 2: T = T + 1
60 PRINT "GUESS"; T; ":"; G;
70 IF G < S THEN PRINT "TOO LOW": LO = G + 1: GOTO 50
80 IF G > S THEN PRINT "TOO HIGH": HI = G - 1: GOTO 50
90 PRINT "RIGHT!"
100 PRINT "THE NUMBER WAS"; S; "FOUND IN"; T; "GUESSES"
